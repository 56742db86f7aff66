"""MRCR aggregation: the mean grade per needle count and per token bin, and what was skipped.

Rows in: {"n_needles", "bin", "score" (None: not graded), "skipped" (did not fit the window),
"failed" (no string response)}. A failed row scores 0 and stays in its mean; a skipped row is in
no mean, only counted. Means are plain means over rows, as the card's per-bin averages are.
"""

from __future__ import annotations

from typing import Sequence

from jaxeval.benchmarks.mrcr.grading import bin_order


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _cell(rows: list[dict]) -> dict:
    graded = [r["score"] for r in rows if not r.get("skipped")]
    return {"score": _mean(graded), "graded": len(graded), "skipped": sum(1 for r in rows if r.get("skipped")),
            "failed": sum(1 for r in rows if r.get("failed"))}


def summarize(rows: Sequence[dict]) -> dict:
    needles = sorted({r["n_needles"] for r in rows})
    per_needles = {}
    for n in needles:
        mine = [r for r in rows if r["n_needles"] == n]
        bins = {label: _cell([r for r in mine if r["bin"] == label]) for label in bin_order()
                if any(r["bin"] == label for r in mine)}
        per_needles[f"{n}needle"] = {**_cell(mine), "bins": bins}
    return {**_cell(list(rows)), "needles": per_needles}


def format_table(summary: dict, bin_tokenizer: str) -> str:
    def pct(value):
        return "n/a" if value is None else f"{100 * value:.2f}"

    lines = [f"OpenAI-MRCR: {pct(summary['score'])} mean grade x100 over {summary['graded']} graded items "
             f"({summary['skipped']} skipped: longer than the window; {summary['failed']} failed)",
             f"  bins counted with {bin_tokenizer}"]
    for name, cell in summary["needles"].items():
        bins = ", ".join(f"{label} {pct(c['score'])} (n={c['graded']}" + (f", skipped {c['skipped']})" if c["skipped"]
                                                                          else ")")
                         for label, c in cell["bins"].items())
        lines.append(f"  {name}: {pct(cell['score'])} (n={cell['graded']}, skipped {cell['skipped']}); {bins}")
    return "\n".join(lines)
