"""Figures of a report as PNG files, drawn with matplotlib's Agg canvas.

No pyplot: a Figure bound to FigureCanvasAgg draws off-screen without touching matplotlib's
global backend, so a report can be made from a notebook or a headless TPU VM alike. A run
keeps its colour in every figure, so model A is the same colour everywhere.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Sequence

from jaxeval.report.data import Figure, Panel

COLUMNS = 3  # panels per row
PANEL_SIZE = (4.6, 3.2)  # inches
DPI = 90


def _colours(runs: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    return {run: palette(index % 10) for index, run in enumerate(runs)}


def _draw_lines(ax, panel: Panel, colours: dict) -> None:
    positions = range(len(panel.x))
    for run, points in panel.by_run.items():
        values = [points.get(x) for x in panel.x]
        ys = [math.nan if v is None else v for v in values]
        style = _line_style(colours, run)
        ax.plot(positions, ys, color=colours[run], label=run, **style)
        bounds = (panel.errors or {}).get(run)
        if bounds:  # the interval: a band over the points (whiskers too, so a lone point shows it)
            low = [bounds.get(x, (math.nan, math.nan))[0] for x in panel.x]
            high = [bounds.get(x, (math.nan, math.nan))[1] for x in panel.x]
            ax.fill_between(positions, low, high, color=colours[run], alpha=0.18, linewidth=0)
            ax.errorbar(positions, ys, yerr=_yerr(ys, low, high), fmt="none", ecolor=colours[run], capsize=4)
    ax.set_xticks(list(positions), list(panel.x))


def _yerr(values, low, high) -> list[list[float]]:
    """Whisker lengths below and above each value (NaN where there is no interval)."""
    return [[max(v - lo, 0.0) if not (math.isnan(v) or math.isnan(lo)) else math.nan for v, lo in zip(values, low)],
            [max(hi - v, 0.0) if not (math.isnan(v) or math.isnan(hi)) else math.nan for v, hi in zip(values, high)]]


def value_range(panel: Panel) -> tuple[float, float] | None:
    """The value axis of a panel: its own y_range; else, when a line panel has at most one point per
    series (an auto-scaled axis would make one value fill the plot), the scale its values live
    on: [0, 1] for rates, [0, 100] for percentages, else 0 to the values' extent; None: from the values."""
    if panel.y_range is not None:
        return panel.y_range
    values = [v for points in panel.by_run.values() for v in points.values() if v is not None]
    values += [bound for points in (panel.errors or {}).values() for pair in points.values() for bound in pair
               if bound is not None and not math.isnan(bound)]
    if not values:
        return (-0.03, 1.03) if panel.kind == "line" else None
    if panel.kind == "line" and all(0.0 <= v <= 1.0 for v in values):
        return (-0.03, 1.03)
    lone = panel.kind != "heatmap" and max(sum(v is not None for v in points.values())
                                           for points in panel.by_run.values()) <= 1
    if not lone:
        return None
    if all(0.0 <= v <= 100.0 for v in values):
        return (0.0, 100.0)
    low, high = min(min(values), 0.0), max(max(values), 0.0)
    span = max(high - low, 1e-9)
    return (low - 0.1 * span, high + 0.1 * span)


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
        heights = [0.0 if v is None else v for v in values]
        ax.bar(offsets, heights, width=width, color=colours[run], label=run)
        bounds = (panel.errors or {}).get(run)
        if bounds:
            low = [bounds.get(x, (math.nan, math.nan))[0] for x in panel.x]
            high = [bounds.get(x, (math.nan, math.nan))[1] for x in panel.x]
            ax.errorbar(offsets, heights, yerr=_yerr(heights, low, high), fmt="none", ecolor="#222", capsize=3)
    ax.set_xticks(list(range(len(panel.x))), list(panel.x), rotation=60, ha="right", fontsize=7)


def _draw_heatmap(ax, panel: Panel, fig) -> None:
    """rows x columns (panel.rows x panel.x) of one run's values; empty cells grey, each cell labelled."""
    import numpy as np

    grid = np.array([[math.nan if (v := panel.by_run.get(row, {}).get(x)) is None else v for x in panel.x]
                     for row in panel.rows], dtype=float)
    low, high = value_range(panel) or (0.0, 1.0)
    from matplotlib import colormaps

    cmap = colormaps["viridis"].with_extremes(bad="#dddddd")
    image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=low, vmax=high)
    ax.set_xticks(range(len(panel.x)), list(panel.x), fontsize=7)
    ax.set_yticks(range(len(panel.rows)), list(panel.rows), fontsize=7)
    for i in range(len(panel.rows)):
        for j in range(len(panel.x)):
            if not math.isnan(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=6,
                        color="white" if grid[i, j] < (low + high) / 2 else "black")
    fig.colorbar(image, ax=ax, shrink=0.8)


def render_figure(figure: Figure, runs: Sequence[str], path: Path) -> Path:
    """Draw `figure` (its panels in a grid, one legend) into the PNG `path`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    # a "curve" over one length is one point per run: drawn as bars (with their intervals), not lines
    panels = tuple(dataclasses.replace(panel, kind="bar") if panel.kind == "line" and len(panel.x) == 1 else panel
                   for panel in figure.panels)
    series = [name for panel in panels if panel.kind != "heatmap" for name in panel.by_run]
    colours = _colours(list(dict.fromkeys([*runs, *series])))
    wide = any(panel.kind == "bar" for panel in panels)
    columns = 1 if wide else min(COLUMNS, len(panels))
    rows = math.ceil(len(panels) / columns)
    width = PANEL_SIZE[0] * (COLUMNS if wide else columns)
    fig = MplFigure(figsize=(width, PANEL_SIZE[1] * rows + 0.8), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax, panel in zip(axes, panels):
        if panel.kind == "heatmap":
            _draw_heatmap(ax, panel, fig)
        else:
            (_draw_bars if panel.kind == "bar" else _draw_lines)(ax, panel, colours)
            ax.grid(True, alpha=0.3)
            if (fixed := value_range(panel)) is not None:
                ax.set_ylim(*fixed)
            if panel.zero_line:
                ax.axhline(0.0, color="#555", linewidth=1)
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel(panel.x_label, fontsize=8)
        ax.set_ylabel(panel.y_label, fontsize=8)
        empty = not any(v is not None for points in panel.by_run.values() for v in points.values())
        if empty:
            ax.text(0.5, 0.5, "nothing scored", ha="center", va="center", color="#888", transform=ax.transAxes)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    shown = [name for name in colours if any(name in panel.by_run for panel in panels if panel.kind != "heatmap")]
    handles = [_legend_handle(colours, run, wide) for run in shown]
    if shown:  # heatmaps only: their colour bars are the legend
        fig.legend(handles, shown, loc="outside lower center", ncols=min(len(shown), 4) or 1, fontsize=9)
    fig.suptitle(figure.title, fontsize=12)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", facecolor="white")
    return path


def _legend_handle(colours: dict, run: str, bar: bool):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return Patch(color=colours[run]) if bar else Line2D([], [], color=colours[run], **_line_style(colours, run))
