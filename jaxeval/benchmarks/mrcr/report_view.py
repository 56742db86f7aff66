"""OpenAI-MRCR in `jaxeval report`: the mean grade per needle count and token bin, against length."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.report.data import BenchmarkView, Figure, Panel, fmt, row_table, sort_lengths


def mrcr_view(pairs: Sequence[tuple[str, Any]]) -> BenchmarkView:
    view = BenchmarkView("mrcr")
    labels = [label for label, _ in pairs]
    cells, panels = {}, {}
    for label, section in pairs:
        summary = section.get("summary") or {}
        cells[label] = {"all": f"{fmt(_pct(summary.get('score')))}  (n={summary.get('graded', '?')}, "
                               f"skipped {summary.get('skipped', '?')})"}
        for name, cell in (summary.get("needles") or {}).items():
            cells[label][name] = f"{fmt(_pct(cell.get('score')))}  (n={cell.get('graded')}, skipped {cell.get('skipped')})"
            for bin_label, c in (cell.get("bins") or {}).items():
                cells[label][f"{name} {bin_label}"] = f"{fmt(_pct(c.get('score')))}  (n={c.get('graded')})"
                panels.setdefault(name, {}).setdefault(label, {})[bin_label] = _pct(c.get("score"))
            if cell.get("skipped"):
                view.issues.append((label, f"{name}: {cell['skipped']} items skipped",
                                    "prompt + output budget longer than the model's window (counted, not graded)"))
    view.tables.append(row_table("Mean grade x100 per needle count and token bin", "needles / bin", labels, cells))
    if panels:
        figure_panels = tuple(Panel(name, "prompt + answer tokens (bin)", "mean grade x100",
                                    sort_lengths(b for points in by_run.values() for b in points), by_run)
                              for name, by_run in panels.items())
        view.figures.append(Figure("mrcr_length", "OpenAI-MRCR: grade against context length", figure_panels))
        first = figure_panels[0]
        view.length_curve, view.curve_name = first.by_run, f"mean grade, {first.title}"
    return view


def _pct(value):
    return None if value is None else 100 * value
