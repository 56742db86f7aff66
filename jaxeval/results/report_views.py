"""Per-benchmark report views: the headline table and the figures of each benchmark.

Known sections (agent_bench, longbench, longbench_e) get their own view. Any other task is
drawn from the schema-v1 summary (`results` x `lengths`) when the file has one, else from the
length-keyed mappings found in its section; what cannot be drawn is listed, never guessed.
Each function takes [(run label, section)] for the runs that have the task, in run order.
"""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.results.report_data import (
    MISSING, BenchmarkView, Figure, Panel, Run, Table, fmt, length_breakdowns, length_key, number, sort_lengths,
)

Pairs = Sequence[tuple[str, Any]]

# agent_bench: the metric plotted per config (rules: rules in the system prompt, all families)
AGENT_LENGTH_METRICS = {"facts": "query_accuracy", "tool_calls": "far_accuracy"}
AGENT_DISTANCE_METRICS = {"facts": "query_accuracy", "tool_calls": "accuracy"}
LONGBENCH_LENGTH_BINS = ((4096, "0-4k"), (8192, "4-8k"), (16384, "8-16k"), (32768, "16-32k"))


def _row_table(title: str, first: str, labels: Sequence[str], values: dict[str, dict[str, str]]) -> Table:
    """Rows in first-seen order across runs, one column per run."""
    order = list(dict.fromkeys(row for run in labels for row in values.get(run, {})))
    return Table(title, (first, *labels), tuple((row, *(values.get(run, {}).get(row, MISSING) for run in labels))
                                                 for row in order))


# --- longctx-agent-bench ---------------------------------------------------------------------

def _agent_value(metrics: dict, config: str):
    if config in AGENT_LENGTH_METRICS:
        return metrics.get(AGENT_LENGTH_METRICS[config])
    return ((metrics.get("cells") or {}).get("system/all") or {}).get("follow")


def agent_bench_view(pairs: Pairs) -> BenchmarkView:
    view = BenchmarkView("agent_bench")
    labels = [label for label, _ in pairs]
    rows = {label: {row["row"]: f"{fmt(row.get('value'))}  ({row.get('scored', '?')} of {row.get('total', '?')})"
                    for row in section.get("rows") or []} for label, section in pairs}
    view.tables.append(_row_table("Headline rows (the card's order)", "row", labels, rows))
    sets = {label: section.get("sets") or {} for label, section in pairs}
    configs = list(dict.fromkeys(config for label in labels for config in sets[label]))

    length_panels = []
    for config in configs:
        splits = {label: sets[label].get(config) or {} for label in labels}
        x = sort_lengths(split for label in labels for split in splits[label])
        by_run = {label: {split: number(_agent_value(metrics or {}, config))
                          for split, metrics in splits[label].items()} for label in labels if splits[label]}
        metric = AGENT_LENGTH_METRICS.get(config, "follow (system/all)")
        length_panels.append(Panel(config, "context length", metric, x, by_run))
    if length_panels:
        view.figures.append(Figure("agent_bench_length", "longctx-agent-bench: score against context length",
                                   tuple(length_panels), "rules: share of targets following the rule "
                                   "placed in the system prompt; null cells (nothing counted) are gaps"))

    distance_panels = []
    for config, metric in AGENT_DISTANCE_METRICS.items():
        splits = sort_lengths(split for label in labels for split in (sets[label].get(config) or {}))
        for split in splits:
            by_run = {}
            for label in labels:
                metrics = (sets[label].get(config) or {}).get(split)
                if not metrics:
                    continue
                if isinstance(metrics.get("by_distance"), dict):
                    by_run[label] = {bucket: number((cell or {}).get(metric))
                                     for bucket, cell in metrics["by_distance"].items()}
                elif config == "tool_calls":  # results written before by_distance: near vs far
                    by_run[label] = {"near": number(metrics.get("near_accuracy")),
                                     "far": number(metrics.get("far_accuracy"))}
            if by_run:
                x = sort_lengths(bucket for points in by_run.values() for bucket in points)
                distance_panels.append(Panel(f"{config} at {split}", "tokens back to the evidence", metric, x, by_run))
    if distance_panels:
        view.figures.append(Figure("agent_bench_distance", "longctx-agent-bench: score against distance",
                                   tuple(distance_panels), "distance: tokens from the planted fact (facts) or "
                                   "the tool's definition (tool_calls) to the scored target"))
    else:
        view.notes.append("no distance breakdown (by_distance) in these results: no distance plot")
    return view


# --- LongBench and LongBench-E ----------------------------------------------------------------

def _bin(tokens: int) -> str:
    for edge, label in LONGBENCH_LENGTH_BINS:
        if tokens < edge:
            return label
    return "32k+"


def longbench_view(pairs: Pairs) -> BenchmarkView:
    view = BenchmarkView("longbench")
    labels = [label for label, _ in pairs]
    cells = {}
    for label, section in pairs:
        scores, samples = section.get("scores") or {}, section.get("samples") or {}
        cells[label] = {name: f"{fmt(score)}  (n={samples.get(name, '?')})" for name, score in scores.items()}
        for table, categories in (section.get("categories") or {}).items():  # those scored (all members run)
            cells[label].update({f"[{table}] {name}": fmt(value) for name, value in (categories or {}).items()
                                 if value is not None})
    view.tables.append(_row_table("Scores per dataset (0-100) and category averages", "dataset", labels, cells))
    datasets = tuple(dict.fromkeys(name for _, section in pairs for name in section.get("scores") or {}))
    if datasets:
        by_run = {label: {name: number(value) for name, value in (section.get("scores") or {}).items()}
                  for label, section in pairs}
        view.figures.append(Figure("longbench_datasets", "LongBench: score per dataset",
                                   (Panel("all datasets", "dataset", "score (0-100)", datasets, by_run, "bar"),)))
    by_run = {}
    for label, section in pairs:
        binned: dict[str, list[float]] = {}
        for outputs in (section.get("outputs") or {}).values():
            for output in outputs or ():
                tokens, score = output.get("raw_prompt_tokens"), number(output.get("score"))
                if isinstance(tokens, int) and score is not None:
                    binned.setdefault(_bin(tokens), []).append(100 * score)
        if binned:
            by_run[label] = {b: sum(values) / len(values) for b, values in binned.items()}
    if by_run:
        x = sort_lengths(b for points in by_run.values() for b in points)
        view.figures.append(Figure("longbench_length", "LongBench: score against context length", (
            Panel("all datasets pooled", "prompt tokens before truncation", "mean sample score (0-100)", x, by_run),),
            "LongBench v1 has no official length split: per-sample scores pooled by prompt length"))
    else:
        view.notes.append("no per-sample outputs in these results: no LongBench length plot "
                          "(LongBench-E reports scores by length)")
    return view


def longbench_e_view(pairs: Pairs) -> BenchmarkView:
    view = BenchmarkView("longbench_e")
    labels = [label for label, _ in pairs]
    buckets = sort_lengths(b for _, s in pairs for score in (s.get("scores") or {}).values()
                           if isinstance(score, dict) for b in score)
    columns = [f"{label} {bucket}" for label in labels for bucket in buckets]
    datasets = list(dict.fromkeys(name for _, section in pairs for name in section.get("scores") or {}))

    def averages(section) -> dict[str, float | None]:
        official = section.get("bucket_averages")
        if isinstance(official, dict) and any(number(v) is not None for v in official.values()):
            return {b: number(v) for b, v in official.items()}
        scores = [s for s in (section.get("scores") or {}).values() if isinstance(s, dict)]
        means = {}
        for b in buckets:
            values = [number(s.get(b)) for s in scores if number(s.get(b)) is not None]
            means[b] = sum(values) / len(values) if values else None
        return means

    rows = []
    for name in datasets:
        cells = []
        for _, section in pairs:
            score = (section.get("scores") or {}).get(name)
            cells.extend(fmt(score.get(b)) if isinstance(score, dict) else MISSING for b in buckets)
        rows.append((name, *cells))
    rows.append(("average", *(fmt(averages(section).get(b)) for _, section in pairs for b in buckets)))
    view.tables.append(Table("Scores per dataset and length bucket (0-100); average: official when all 13 "
                             "datasets ran, else over those present", ("dataset", *columns), tuple(rows)))

    panels = [Panel("average", "length bucket", "score (0-100)", buckets,
                    {label: averages(section) for label, section in pairs})]
    for name in datasets:
        by_run = {label: {b: number(v) for b, v in section["scores"][name].items()}
                  for label, section in pairs if isinstance((section.get("scores") or {}).get(name), dict)}
        panels.append(Panel(name, "length bucket", "score", buckets, by_run))
    if buckets:
        view.figures.append(Figure("longbench_e_length", "LongBench-E: score against context length",
                                   tuple(panels), "average: the official mean over all 13 datasets when all were "
                                   "scored, else the mean over those present"))
    return view


KNOWN_VIEWS = {"agent_bench": agent_bench_view, "longbench": longbench_view, "longbench_e": longbench_e_view}


# --- anything else: the v1 summary, else length-keyed mappings in the section -----------------

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
        view.tables.append(_row_table("Headline", "row", labels, cells))
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
        view.tables.append(_row_table("Scores by context length", "breakdown @ length", labels, values))
    if len(names) > 24:
        view.notes.append(f"{len(names) - 24} more length breakdowns not drawn")
    if panels:
        view.figures.append(Figure(f"{task}_length", f"{task}: score against context length", tuple(panels)))
    return view if view.tables or view.figures else None


def describe_section(section) -> str:
    if isinstance(section, dict):
        keys = list(section)
        return f"object: {', '.join(map(str, keys[:8]))}{' ...' if len(keys) > 8 else ''}" if keys else "empty object"
    if section is None:
        return "no section"
    return type(section).__name__
