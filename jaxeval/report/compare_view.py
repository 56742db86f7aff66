"""A Comparison (compare.py) as report views: per task its paired-delta tables (per group, per
length, samples not paired) and two figures, modified against reference side by side: bars per
group with the delta's interval as whiskers on the modified bar, and the delta per context
length with its interval as a band."""

from __future__ import annotations

from jaxeval.report.compare import Comparison, TaskComparison
from jaxeval.report.paired import Delta, method_text
from jaxeval.report.data import BenchmarkView, Figure, Panel, Table, fmt, shown_location, sort_lengths

LISTED_KEYS = 10  # keys of unpaired samples shown per side (all are counted)
DELTA = "delta (modified - reference)"


def _ci(delta: Delta) -> str:
    return "n/a" if delta.low is None else f"[{fmt(delta.low)}, {fmt(delta.high)}]"


def _row(name: str, delta: Delta, *extra: str) -> tuple[str, ...]:
    return (name, str(delta.n), fmt(delta.reference), fmt(delta.modified), fmt(delta.delta), _ci(delta), *extra)


def _counts_by_group(samples) -> dict[str, int]:
    counts: dict[str, int] = {}
    for sample in samples:
        counts[sample.group] = counts.get(sample.group, 0) + 1
    return counts


def _tables(item: TaskComparison, level: float) -> list[Table]:
    pairing, interval = item.pairing, f"{100 * level:g}% CI"
    only_ref, only_mod = _counts_by_group(pairing.only_reference), _counts_by_group(pairing.only_modified)
    unscored = _counts_by_group(ref for ref, _ in pairing.unscored)
    groups = list(dict.fromkeys([*item.by_group, *only_ref, *only_mod, *unscored]))
    empty = Delta(0, None, None, None, None, None)
    rows = [_row("all samples", item.overall, str(len(pairing.only_reference)), str(len(pairing.only_modified)),
                 str(len(pairing.unscored)))]
    rows += [_row(group, item.by_group.get(group, empty), str(only_ref.get(group, 0)), str(only_mod.get(group, 0)),
                  str(unscored.get(group, 0))) for group in groups]
    tables = [Table(f"{item.task}: paired per-sample deltas per group", (
        "group", "paired", "reference", "modified", "delta", interval, "only in reference", "only in modified",
        "not scored"), tuple(rows))]
    lengths = sort_lengths(item.by_length)
    if lengths:
        tables.append(Table(f"{item.task}: paired deltas per context length", (
            "length", "paired", "reference", "modified", "delta", interval),
            tuple(_row(length, item.by_length[length]) for length in lengths)))
    if len(lengths) > 1:  # several lengths: each group at each of them
        order = {length: index for index, length in enumerate(lengths)}
        cells = sorted(item.by_group_length.items(), key=lambda kv: (groups.index(kv[0][0]) if kv[0][0] in groups
                                                                      else len(groups), order.get(kv[0][1], 0)))
        tables.append(Table(f"{item.task}: paired deltas per group and context length", (
            "group @ length", "paired", "reference", "modified", "delta", interval),
            tuple(_row(f"{group} @ {length}", delta) for (group, length), delta in cells)))
    unpaired = [(side, sample.key) for side, samples in (("reference", pairing.only_reference),
                                                          ("modified", pairing.only_modified))
                for sample in samples[:LISTED_KEYS]]
    unpaired += [("both (null score in one)", ref.key) for ref, _ in pairing.unscored[:LISTED_KEYS]]
    if unpaired:
        tables.append(Table(f"{item.task}: samples not paired (first {LISTED_KEYS} of each kind; all are counted above)",
                            ("only in", "key"), tuple(unpaired)))
    return tables


def _figure(item: TaskComparison, labels: tuple[str, str], level: float) -> Figure | None:
    ref_label, mod_label = labels
    groups = tuple(item.by_group)
    panels = []
    if groups:
        by_run = {ref_label: {g: d.reference for g, d in item.by_group.items()},
                  mod_label: {g: d.modified for g, d in item.by_group.items()}}
        whiskers = {mod_label: {g: (d.reference + d.low, d.reference + d.high)
                                for g, d in item.by_group.items() if d.low is not None}}
        panels.append(Panel("per group: reference and modified", "group", "mean score", groups, by_run, "bar",
                            errors=whiskers))
    lengths = sort_lengths(item.by_length)
    if lengths:
        deltas = {length: item.by_length[length] for length in lengths}
        bound = max([abs(v) for d in deltas.values() for v in (d.low, d.high, d.delta) if v is not None] + [0.0]) or 1.0
        panels.append(Panel("delta per context length", "context length", DELTA, lengths,
                            {DELTA: {length: d.delta for length, d in deltas.items()}}, "line",
                            errors={DELTA: {length: (d.low, d.high) for length, d in deltas.items()
                                            if d.low is not None}},
                            y_range=(-1.2 * bound, 1.2 * bound), zero_line=True))
    if not panels:
        return None
    return Figure(f"compare_{item.task}", f"{item.task}: {mod_label} against {ref_label}", tuple(panels),
                  f"whiskers on the modified bars and the band: the paired bootstrap {100 * level:g}% interval of "
                  f"the delta (added to the reference mean on the bars)")


def _shown_value(text: str) -> str:
    """A setting's JSON value as the shared page shows it: a local path without its folders."""
    import json

    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return text
    return json.dumps(shown_location(value)) if isinstance(value, str) else text


def comparison_views(comparison: Comparison) -> list[BenchmarkView]:
    labels = (comparison.reference.label, comparison.modified.label)
    method = method_text(comparison.resamples, comparison.seed, comparison.level)
    head = BenchmarkView("comparison")
    head.tables.append(Table("Modified against reference", ("run", "role", "file"), (
        (labels[1], "modified", shown_location(comparison.modified.path)),
        (labels[0], "reference", shown_location(comparison.reference.path)))))
    if comparison.differences:
        head.tables.append(Table("What differs between the runs", ("setting", "reference", "modified"),
                                 tuple((setting, _shown_value(ref), _shown_value(mod))
                                       for setting, ref, mod in comparison.differences)))
    head.notes.append(f"method: {method}; samples are paired by their journal / sample key, a sample present or "
                      f"scored in one run only is counted, never paired")
    for side, tasks in comparison.only_in.items():
        if tasks:
            head.notes.append(f"tasks in the {side} run only (not compared): {', '.join(tasks)}")
    views = [head]
    for item in comparison.tasks:
        view = BenchmarkView(f"{item.task} (modified vs reference)")
        view.tables.extend(item.tables)
        if item.pairing is None:
            view.notes.append(f"{item.task}: {item.note}")
        else:
            view.tables.extend(_tables(item, comparison.level))
            figure = _figure(item, labels, comparison.level)
            if figure is not None:
                view.figures.append(figure)
            view.notes.append(f"per-sample scores from: reference: {item.sources[0]}; modified: {item.sources[1]}")
        views.append(view)
    return views
