"""Figures of a report as PNG files, drawn with matplotlib's Agg canvas.

No pyplot: a Figure bound to FigureCanvasAgg draws off-screen without touching matplotlib's
global backend, so a report can be made from a notebook or a headless TPU VM alike. A run
keeps its colour in every figure, so model A is the same colour everywhere.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from jaxeval.results.report_data import Figure, Panel

COLUMNS = 3  # panels per row
PANEL_SIZE = (4.6, 3.2)  # inches
DPI = 90


def _colours(runs: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {run: palette(index % 10) for index, run in enumerate(runs)}


def _is_rate(panel: Panel) -> bool:
    values = [v for points in panel.by_run.values() for v in points.values() if v is not None]
    return bool(values) and all(0.0 <= v <= 1.0 for v in values)


def _draw_lines(ax, panel: Panel, colours: dict) -> None:
    positions = range(len(panel.x))
    for run, points in panel.by_run.items():
        values = [points.get(x) for x in panel.x]
        ys = [math.nan if v is None else v for v in values]
        style = _line_style(colours, run)
        ax.plot(positions, ys, color=colours[run], label=run, **style)
    ax.set_xticks(list(positions), list(panel.x))


MARKERS = ("o", "s", "^", "D", "v", "P")
DASHES = ("-", "--", "-.", ":")


def _line_style(colours: dict, run: str) -> dict:
    """Runs with equal scores stay visible: each run its marker, dash and (shrinking) size."""
    index = list(colours).index(run)
    return {"marker": MARKERS[index % len(MARKERS)], "linestyle": DASHES[index % len(DASHES)],
            "markersize": max(9 - 2 * index, 4), "linewidth": 2}


def _draw_bars(ax, panel: Panel, colours: dict) -> None:
    runs = list(panel.by_run)
    width = 0.8 / max(len(runs), 1)
    for index, run in enumerate(runs):
        values = [panel.by_run[run].get(x) for x in panel.x]
        offsets = [i - 0.4 + width * (index + 0.5) for i in range(len(panel.x))]
        ax.bar(offsets, [0.0 if v is None else v for v in values], width=width, color=colours[run], label=run)
    ax.set_xticks(list(range(len(panel.x))), list(panel.x), rotation=60, ha="right", fontsize=7)


def render_figure(figure: Figure, runs: Sequence[str], path: Path) -> Path:
    """Draw `figure` (its panels in a grid, one legend) into the PNG `path`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    colours = _colours(runs)
    panels = figure.panels
    wide = any(panel.kind == "bar" for panel in panels)
    columns = 1 if wide else min(COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    width = PANEL_SIZE[0] * (COLUMNS if wide else columns)
    fig = MplFigure(figsize=(width, PANEL_SIZE[1] * rows + 0.8), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, panel in zip(axes, panels):
        (_draw_bars if panel.kind == "bar" else _draw_lines)(ax, panel, colours)
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.x_label, fontsize=8)
        ax.set_ylabel(panel.y_label, fontsize=8)
        ax.grid(True, alpha=0.3)
        empty = not any(v is not None for points in panel.by_run.values() for v in points.values())
        if panel.kind == "line" and (empty or _is_rate(panel)):
            ax.set_ylim(-0.03, 1.03)
        if empty:
            ax.text(0.5, 0.5, "nothing scored", ha="center", va="center", color="#888", transform=ax.transAxes)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    shown = [run for run in runs if any(run in panel.by_run for panel in panels)]
    handles = [_legend_handle(colours, run, wide) for run in shown]
    fig.legend(handles, shown, loc="outside lower center", ncols=min(len(shown), 4) or 1, fontsize=9)
    fig.suptitle(figure.title, fontsize=12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", facecolor="white")
    return path


def _legend_handle(colours: dict, run: str, bar: bool):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return Patch(color=colours[run]) if bar else Line2D([], [], color=colours[run], **_line_style(colours, run))
