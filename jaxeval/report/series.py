"""The report of a step series (jaxeval/series.py): each headline score against the training step, and a
length x step heatmap of each task's headline metric, as PNGs and one HTML page beside the series file."""

from __future__ import annotations

import html
from pathlib import Path

from jaxeval.report.data import number, sort_lengths


def headline_lines(series: dict) -> dict[str, list[tuple[int, float]]]:
    """"<task>: <row>" -> [(step, value)] for every headline row with a number."""
    lines: dict[str, list[tuple[int, float]]] = {}
    for step, entry in series["steps"].items():
        for task, rows in entry.get("headline", {}).items():
            for row in rows if isinstance(rows, list) else []:
                value = number(row.get("value")) if isinstance(row, dict) else None
                if value is not None:
                    lines.setdefault(f"{task}: {row.get('row', row.get('metric'))}", []).append((int(step), value))
    return {name: sorted(points) for name, points in lines.items()}


def length_grid(series: dict) -> dict[str, tuple[str, list[str], list[int], list[list[float | None]]]]:
    """task -> (metric, lengths, steps, values[length][step]): the mean, over the task's leaves of one
    length, of the metric its first headline row reports."""
    grids = {}
    steps = sorted(int(s) for s in series["steps"])
    tasks = {task: rows[0] for entry in series["steps"].values() for task, rows in entry.get("headline", {}).items()
             if isinstance(rows, list) and rows and isinstance(rows[0], dict) and rows[0].get("metric")}
    for task, first in tasks.items():
        metric = first["metric"]
        cells: dict[tuple[str, int], list[float]] = {}
        for step in steps:
            entry = series["steps"][str(step)]
            for leaf, length in entry.get("lengths", {}).items():
                value = number((entry["scores"].get(leaf) or {}).get(metric)) if leaf.startswith(f"{task}/") else None
                if value is not None:
                    cells.setdefault((str(length), step), []).append(value)
        lengths = list(sort_lengths({length for length, _ in cells}))
        if lengths:
            values = [[(sum(cells[(n, s)]) / len(cells[(n, s)]) if (n, s) in cells else None) for s in steps]
                      for n in lengths]
            grids[task] = (metric, lengths, steps, values)
    return grids


def write_series_report(series: dict, folder: str | Path) -> Path:
    """folder/index.html with scores_by_step.png and one <task>_length_by_step.png per task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    lines = headline_lines(series)
    if lines:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for name, points in lines.items():
            ax.plot([s for s, _ in points], [v for _, v in points], marker="o", label=name)
        ax.set_xlabel("training step")
        ax.set_ylabel("headline score")
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(folder / "scores_by_step.png", dpi=100)
        plt.close(fig)
        images.append(("Headline scores by training step", "scores_by_step.png"))
    for task, (metric, lengths, steps, values) in length_grid(series).items():
        grid = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
        fig, ax = plt.subplots(figsize=(max(4, 0.6 * len(steps) + 2), max(2.5, 0.5 * len(lengths) + 1.5)))
        shown = ax.imshow(grid, aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(steps)), [str(s) for s in steps], rotation=45)
        ax.set_yticks(range(len(lengths)), lengths)
        ax.set_xlabel("training step")
        ax.set_ylabel("length")
        ax.set_title(f"{task}: {metric}")
        fig.colorbar(shown, ax=ax)
        fig.tight_layout()
        name = f"{task}_length_by_step.png"
        fig.savefig(folder / name, dpi=100)
        plt.close(fig)
        images.append((f"{task}: {metric}, length x step", name))
    body = "".join(f"<h2>{html.escape(title)}</h2><img src=\"{html.escape(src)}\">" for title, src in images)
    page = (f"<!doctype html><meta charset=\"utf-8\"><title>{html.escape(series['model'])}: scores by step</title>"
            f"<h1>{html.escape(series['model'])}</h1><p>{len(series['steps'])} step(s): "
            f"{html.escape(', '.join(series['steps']))}</p>{body}")
    (folder / "index.html").write_text(page, encoding="utf-8")
    return folder / "index.html"
