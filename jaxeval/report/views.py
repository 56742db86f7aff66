"""The report's generic view: a task whose benchmark contributes no view of its own
(Benchmark.report_view) is drawn from the schema-v1 summary (`results` x `lengths`) when the
file has one, else from the length-keyed mappings found in its section; what cannot be drawn
is listed, never guessed."""

from __future__ import annotations

from typing import Sequence

from jaxeval.report.data import (
    BenchmarkView, Figure, Panel, Run, fmt, length_breakdowns, length_key, number, row_table, sort_lengths,
)


def _leaf_series(summary: dict, task: str) -> dict[str, dict[str, float | None]]:
    """'leaf metric' -> {length: value} from `results` and `lengths` (docs/results_schema.md)."""
    results, lengths = summary.get("results") or {}, summary.get("lengths") or {}
    leaves = (summary.get("group_subtasks") or {}).get(task) or [leaf for leaf in results
                                                                 if leaf.split("/")[0] == task]
    series: dict[str, dict[str, float | None]] = {}
    for leaf in leaves:
        metrics, axis = results.get(leaf) or {}, lengths.get(leaf)
        if isinstance(axis, str):  # the leaf is one length: its first metric is its score
            base = leaf[:-len(axis)].rstrip("/") if leaf.endswith(axis) else leaf
            metric = next(iter(metrics), None)
            if metric is not None:
                series.setdefault(f"{base} {metric}", {})[axis] = number(metrics[metric])
        elif isinstance(axis, list):  # metric names end in _<length>
            for name, value in metrics.items():
                for length in axis:
                    if name.endswith(f"_{length}"):
                        series.setdefault(f"{leaf} {name[:-len(length) - 1]}", {})[length] = number(value)
    return series


def _group_series(summary: dict, task: str) -> dict[str, dict[str, float | None]]:
    """'name' -> {length: value} from the task's `groups` whose key has one length part
    ("8k/overall", "token_length/16k"); the other parts name the series."""
    series: dict[str, dict[str, float | None]] = {}
    for key, value in ((summary.get("groups") or {}).get(task) or {}).items():
        parts = str(key).split("/")
        at = [i for i, part in enumerate(parts) if length_key(part) is not None]
        if len(at) == 1 and len(parts) > 1:
            name = "/".join(parts[:at[0]] + parts[at[0] + 1:])
            series.setdefault(name, {})[parts[at[0]]] = number(value)
    return series


def _headline_cells(summary: dict, task: str) -> dict[str, str]:
    """The task's own metrics (a task that is its only leaf), then its headline rows, else its groups."""
    cells = {name: fmt(value) for name, value in ((summary.get("results") or {}).get(task) or {}).items()}
    rows = (summary.get("headline") or {}).get(task) or []
    if rows:
        return {**cells, **{row.get("row", "?"): fmt(row.get("value")) for row in rows if isinstance(row, dict)}}
    return {**cells, **{name: fmt(value) for name, value in ((summary.get("groups") or {}).get(task) or {}).items()}}


def generic_view(task: str, runs: Sequence[Run]) -> BenchmarkView | None:
    """Tables and length plots of a task no view knows; None when nothing could be read."""
    view = BenchmarkView(task)
    labels = [run.label for run in runs]
    cells = {run.label: _headline_cells(run.summary, task) for run in runs}
    if any(cells.values()):
        view.tables.append(row_table("Headline", "row", labels, cells))
    series_by_run = {}
    for run in runs:
        series = ({**_group_series(run.summary, task), **_leaf_series(run.summary, task)}
                  or length_breakdowns(run.sections.get(task)))
        if series:
            series_by_run[run.label] = series
    names = list(dict.fromkeys(name for series in series_by_run.values() for name in series))
    panels = []
    for name in names[:24]:  # a readable page: the first 24 breakdowns
        by_run = {label: series[name] for label, series in series_by_run.items() if name in series}
        x = sort_lengths(length for points in by_run.values() for length in points)
        panels.append(Panel(name, "context length", "score", x, by_run))
    if panels and not view.tables:  # no headline: the breakdowns themselves are the table
        values = {label: {f"{p.title} @ {x}": fmt(points.get(x)) for p in panels
                          for x in p.x if (points := p.by_run.get(label)) is not None} for label in labels}
        view.tables.append(row_table("Scores by context length", "breakdown @ length", labels, values))
    if len(names) > 24:
        view.notes.append(f"{len(names) - 24} more length breakdowns not drawn")
    if panels:
        view.figures.append(Figure(f"{task}_length", f"{task}: score against context length", tuple(panels)))
        view.length_curve, view.curve_name = panels[0].by_run, panels[0].title
    for run in runs:
        for leaf, metrics in ((run.summary.get("results") or {}).items()):
            if leaf.split("/")[0] == task and isinstance(metrics, dict):
                nulls = [name for name, value in metrics.items() if value is None]
                if nulls:
                    view.issues.append((run.label, f"{leaf}: {', '.join(nulls)} null", "nothing scored there"))
    return view if view.tables or view.figures else None


def describe_section(section) -> str:
    if isinstance(section, dict):
        keys = list(section)
        return f"object: {', '.join(map(str, keys[:8]))}{' ...' if len(keys) > 8 else ''}" if keys else "empty object"
    if section is None:
        return "no section"
    return type(section).__name__
