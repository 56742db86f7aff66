"""Error bars of a single run: the standard error of the mean of its per-sample headline scores.

Where a benchmark's sample_scores hook gives per-sample scores (from the results' details or the
run's --log_samples rows), each run's mean per context length and per group (dataset / config)
is drawn with +-1 standard error (sample standard deviation, ddof=1, over sqrt(n)) as whiskers
(and a band on the length curve), beside a table of mean +- SE (n). A point of one sample has no
interval; a task without per-sample scores gets no figure, and the page says so.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

from jaxeval.report.data import Figure, Panel, Run, Table, fmt, sort_lengths

METHOD = ("mean of the per-sample headline scores +- 1 standard error of the mean (sample standard deviation, "
          "ddof=1, over sqrt(n)); no whisker where a point has a single sample")


@dataclasses.dataclass(frozen=True)
class Spread:
    mean: float
    se: float | None  # None: fewer than two samples
    n: int

    def cell(self) -> str:
        return f"{fmt(self.mean)} +- {fmt(self.se)} (n={self.n})" if self.se is not None else \
            f"{fmt(self.mean)} (n={self.n})"


def spreads(values_by_name: Mapping[str, Sequence[float]]) -> dict[str, Spread]:
    from jaxeval.run.lm_eval_view import stderr

    return {name: Spread(sum(values) / len(values), stderr(values), len(values))
            for name, values in values_by_name.items() if values}


def run_spreads(scores: Sequence) -> tuple[dict[str, Spread], dict[str, Spread]]:
    """(by context length, by group) over the scored samples (SampleScore: group, length, score)."""
    by_length: dict[str, list[float]] = {}
    by_group: dict[str, list[float]] = {}
    for sample in scores:
        if sample.score is None:
            continue
        by_group.setdefault(str(sample.group), []).append(float(sample.score))
        if sample.length is not None:
            by_length.setdefault(str(sample.length), []).append(float(sample.score))
    return spreads(by_length), spreads(by_group)


def _panel(title: str, x_label: str, kind: str, by_run: dict[str, dict[str, Spread]], x: Sequence[str]) -> Panel:
    return Panel(title, x_label, "mean per-sample score", tuple(x),
                 {run: {name: s.mean for name, s in points.items()} for run, points in by_run.items()}, kind=kind,
                 errors={run: {name: (s.mean - s.se, s.mean + s.se) for name, s in points.items() if s.se is not None}
                         for run, points in by_run.items()})


def spread_parts(task: str, runs: Sequence[Run], benchmark) -> tuple[Figure | None, Table | None, str | None]:
    """The task's error-bar figure and table over the runs that hold per-sample scores, and a note
    naming the runs that hold none (None when every run has them)."""
    from jaxeval.report.compare import task_sample_scores

    lengths, groups, without = {}, {}, []
    for run in runs:
        if task not in run.sections:
            continue
        scores, _, source = task_sample_scores(run, task, benchmark)
        if not scores:
            without.append(f"{run.label} ({source})")
            continue
        lengths[run.label], groups[run.label] = run_spreads(scores)
    note = f"no error bars for {', '.join(without)}: no per-sample scores" if without else None
    if not groups:
        return None, None, note
    x_lengths = sort_lengths(name for points in lengths.values() for name in points)
    x_groups = list(dict.fromkeys(name for points in groups.values() for name in points))
    panels = []
    if x_lengths:
        panels.append(_panel(f"{task}: mean score by context length", "context length", "line", lengths, x_lengths))
    panels.append(_panel(f"{task}: mean score by group", "group", "bar", groups, x_groups))
    labels = list(groups)
    rows = [(f"@ {name}", *(lengths[label][name].cell() if name in lengths.get(label, {}) else "-" for label in labels))
            for name in x_lengths]
    rows += [(name, *(groups[label][name].cell() if name in groups[label] else "-" for label in labels))
             for name in x_groups]
    table = Table(f"{task}: per-sample mean +- standard error (n)", ("length / group", *labels), tuple(rows))
    figure = Figure(f"{task}_error_bars", f"{task}: per-sample means with standard errors", tuple(panels),
                    caption=METHOD)
    return figure, table, note


def _matching_errors(panel: Panel, ours: Panel) -> dict | None:
    """Our whiskers for a view's own panel when it plots the very same means (every point of a
    run equal to our mean at that x, on the same axis kind); None when any run's points differ."""
    if panel.errors is not None or panel.kind != ours.kind:
        return None
    errors = {}
    for run, points in panel.by_run.items():
        mine = ours.by_run.get(run)
        shown = {x: v for x, v in points.items() if v is not None}
        if not mine or not shown or any(x not in mine or not math.isclose(v, mine[x], rel_tol=1e-9, abs_tol=1e-9)
                                         for x, v in shown.items()):
            return None
        errors[run] = {x: bounds for x, bounds in ours.errors.get(run, {}).items() if x in shown}
    return errors


def _with_errors(view, figure: Figure) -> int:
    """Put our whiskers on the view's own panels that plot the same means; how many got them."""
    drawn = 0
    for index, own in enumerate(view.figures):
        panels = []
        for panel in own.panels:
            errors = next((found for ours in figure.panels if (found := _matching_errors(panel, ours))), None)
            panels.append(panel if errors is None else dataclasses.replace(panel, errors=errors))
            drawn += errors is not None
        view.figures[index] = dataclasses.replace(own, panels=tuple(panels))
    return drawn


def add_error_bars(views: Sequence, runs: Sequence[Run], benchmarks: Mapping) -> None:
    """Give each task view its error-bar figure and table where its benchmark has per-sample scores,
    and whiskers on its own length curves and bars that plot the same per-sample means."""
    for view in views:
        benchmark = benchmarks.get(view.name)
        if benchmark is None:
            continue
        figure, table, note = spread_parts(view.name, runs, benchmark)
        if figure is not None:
            if _with_errors(view, figure):
                view.notes.append(f"whiskers on the plots of per-sample means: {METHOD}")
            view.figures.append(figure)
            view.tables.append(table)
        if note:
            view.notes.append(note)
