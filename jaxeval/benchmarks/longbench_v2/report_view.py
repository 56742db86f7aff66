"""LongBench v2 in `jaxeval report`: result.py's table per run, and accuracy against the length class."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.benchmarks.longbench_v2.scoring import COLUMNS
from jaxeval.report.data import BenchmarkView, Figure, Panel, Table, fmt


def view_for(task: str):
    def view(pairs: Sequence[tuple[str, Any]]) -> BenchmarkView:
        result = BenchmarkView(task)
        rows = tuple((label, *(fmt((section.get("table") or {}).get(c), 1) for c in COLUMNS)) for label, section in pairs)
        title = "Accuracy (%) as result.py tabulates it" + (
            " (log-likelihood over A-D: not the official score)" if task.endswith("loglik") else "")
        result.tables.append(Table(title, ("run", *COLUMNS), rows))
        by_run = {label: {c: (section.get("table") or {}).get(c) for c in ("short", "medium", "long")}
                  for label, section in pairs}
        result.figures.append(Figure(f"{task}_length", f"{task}: accuracy against length class", (
            Panel("all items", "length class", "accuracy (%)", ("short", "medium", "long"), by_run),)))
        result.length_curve, result.curve_name = by_run, "accuracy (%)"
        for label, section in pairs:
            prompting = section.get("prompting") or {}
            if prompting.get("truncated"):
                result.issues.append((label, f"{prompting['truncated']} prompts cut in the middle",
                                      f"longer than max_len {prompting.get('max_len')} (pred.py's rule)"))
            if prompting.get("empty_responses"):
                result.issues.append((label, f"{prompting['empty_responses']} empty responses",
                                      "scored wrong (pred.py would drop them)"))
        return result
    return view
