"""longctx-agent-bench in `jaxeval report`: the card's headline rows, score against length and
against distance. Takes [(run label, section)] for the runs that have the task, in run order."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.report.data import BenchmarkView, Figure, Panel, fmt, number, row_table, sort_lengths

Pairs = Sequence[tuple[str, Any]]

# agent_bench: the metric plotted per config (rules: rules in the system prompt, all families)
AGENT_LENGTH_METRICS = {"facts": "query_accuracy", "tool_calls": "far_accuracy"}
AGENT_DISTANCE_METRICS = {"facts": "query_accuracy", "tool_calls": "accuracy"}


def _agent_value(metrics: dict, config: str):
    if config in AGENT_LENGTH_METRICS:
        return metrics.get(AGENT_LENGTH_METRICS[config])
    return ((metrics.get("cells") or {}).get("system/all") or {}).get("follow")


def agent_bench_view(pairs: Pairs) -> BenchmarkView:
    view = BenchmarkView("agent_bench")
    labels = [label for label, _ in pairs]
    rows = {label: {row["row"]: f"{fmt(row.get('value'))}  ({row.get('scored', '?')} of {row.get('total', '?')})"
                    for row in section.get("rows") or []} for label, section in pairs}
    view.tables.append(row_table("Headline rows (the card's order)", "row", labels, rows))
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
    heatmaps = _distance_heatmaps(labels, sets)
    if heatmaps:
        view.figures.append(Figure("agent_bench_heatmap", "longctx-agent-bench: context length x distance",
                                   tuple(heatmaps), "cell: the share of targets right at that context length "
                                   "(column) and distance back to the evidence (row); grey: no target there"))
    view.length_curve = {label: {split: number((metrics or {}).get("query_accuracy"))
                                 for split, metrics in (sets[label].get("facts") or {}).items()}
                         for label in labels if sets[label].get("facts")}
    view.curve_name = "facts query_accuracy"
    for label, section in pairs:
        view.issues.extend(_issues(label, section))
    return view


def _distance_heatmaps(labels, sets) -> list[Panel]:
    """Per run and config: rows the distance buckets, columns the context lengths (splits)."""
    panels = []
    for config, metric in AGENT_DISTANCE_METRICS.items():
        for label in labels:
            splits = {split: metrics.get("by_distance") for split, metrics in (sets[label].get(config) or {}).items()
                      if isinstance((metrics or {}).get("by_distance"), dict)}
            if not splits:
                continue
            rows = sort_lengths(bucket for buckets in splits.values() for bucket in buckets)
            grid = {bucket: {split: number((buckets.get(bucket) or {}).get(metric)) for split, buckets in splits.items()}
                    for bucket in rows}
            panels.append(Panel(f"{label}: {config} {metric}", "context length", "tokens back to the evidence",
                                sort_lengths(splits), grid, "heatmap", y_range=(0.0, 1.0), rows=rows))
    return panels


def _issues(label: str, section: dict) -> list[tuple[str, str, str]]:
    """Headline rows not fully scored, rules cells with unaligned targets, mode fallbacks."""
    found = []
    for row in section.get("rows") or ():
        scored, total = row.get("scored"), row.get("total")
        if isinstance(scored, int) and isinstance(total, int) and scored < total:
            why = ("targets the reference's effect does not count (|effect| < 1 nat) or unaligned"
                   if row.get("metric") in ("follow", "worst_retained") else "targets not aligned to token boundaries")
            found.append((label, f"{row.get('row')}: {scored} of {total} scored", why))
    for note in section.get("mode_notes") or ():
        found.append((label, "alignment mode", str(note)))
    reference = section.get("reference")
    if isinstance(reference, dict) and reference.get("note"):
        found.append((label, "rules reference", str(reference["note"])))
    return found
