"""HELMET (and its AgenticLU subset) in `jaxeval report`: every dataset plotted with its own
HELMET headline measure (scoring.HEADLINE: ruler_recall for RULER needles, NDCG@10 for re-rank,
rougeL_f1 for InfBench QA, ...), the category scores and the overall score against context
length, and for the recall datasets a length x needle-depth heatmap per run. Takes
[(run label, section)] for the runs that have the task."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.benchmarks.helmet.scoring import OVERALL_ORDER
from jaxeval.benchmarks.helmet.tasks import category, dataset_key
from jaxeval.report.data import BenchmarkView, Figure, Panel, fmt, number, row_table, sort_lengths

Pairs = Sequence[tuple[str, Any]]
SCALE = (0.0, 100.0)  # HELMET's averages are x100


def _units(section) -> list[dict]:
    return [unit for unit in section.get("units") or () if isinstance(unit, dict)]


def _measure(unit: dict) -> tuple[str | None, float | None]:
    """The unit's headline measure (its first, as HELMET's collect_results column) and value."""
    headline = unit.get("headline") or {}
    name = next(iter(headline), None)
    return name, number(headline.get(name)) if name else None


def _dataset_panels(pairs: Pairs) -> list[Panel]:
    by_dataset: dict[str, dict[str, dict[str, float | None]]] = {}
    measures: dict[str, str] = {}
    for label, section in pairs:
        for unit in _units(section):
            key = dataset_key(unit["dataset"])
            name, value = _measure(unit)
            if name:
                measures[key] = name
            by_dataset.setdefault(key, {}).setdefault(label, {})[unit["length"]] = value
    return [Panel(f"{key} ({measures.get(key, '?')})", "context length", measures.get(key, "score"),
                  sort_lengths(x for points in by_run.values() for x in points), by_run, y_range=SCALE)
            for key, by_run in by_dataset.items()]


def _collect_curves(pairs: Pairs) -> dict[str, dict[str, dict[str, float | None]]]:
    """'overall' and each category -> run -> length -> score (None where incomplete)."""
    curves: dict[str, dict[str, dict[str, float | None]]] = {}
    for label, section in pairs:
        for length, row in (section.get("collect") or {}).items():
            curves.setdefault("overall", {}).setdefault(label, {})[length] = number(row.get("overall"))
            for name in OVERALL_ORDER:
                cell = (row.get("categories") or {}).get(name)
                if isinstance(cell, dict):
                    curves.setdefault(name, {}).setdefault(label, {})[length] = (
                        number(cell.get("score")) if cell.get("complete") else None)
    return curves


def _depth_panels(pairs: Pairs) -> list[Panel]:
    """Per run: recall datasets' headline measure by length (columns) and needle depth (rows)."""
    from jaxeval.benchmarks.helmet.depth import depth_label
    from jaxeval.benchmarks.helmet.sample_scores import headline_measure

    panels = []
    for label, section in pairs:
        cells: dict[tuple[str, str], list[float]] = {}
        for unit, records in (section.get("outputs") or {}).items():
            dataset, length = unit.rsplit("/", 1)
            try:
                if category(dataset) != "recall":
                    continue
            except (KeyError, ValueError):
                continue
            measure = headline_measure(dataset)
            for record in records or ():
                raw = record.get(measure)
                depth, value = depth_label(record.get("needle_depth")), float(raw) if isinstance(raw, bool) else number(raw)
                if depth is not None and value is not None:
                    cells.setdefault((depth, length), []).append(100 * value)
        if cells:
            rows = tuple(sorted({depth for depth, _ in cells}, key=lambda d: int(d.split("-")[0])))
            lengths = sort_lengths(length for _, length in cells)
            grid = {depth: {length: sum(v) / len(v) for (d, length), v in cells.items() if d == depth}
                    for depth in rows}
            panels.append(Panel(f"{label}: recall by needle depth", "context length", "needle depth", lengths, grid,
                                "heatmap", y_range=SCALE, rows=rows))
    return panels


def _issues(label: str, section: dict) -> list[tuple[str, str, str]]:
    found = []
    for unit in _units(section):
        where = f"{unit['dataset']} {unit['length']}"
        for name, value in (unit.get("headline") or {}).items():
            if value is None:
                why = ("judged measure, no --helmet_judge given" if name.startswith("gpt4")
                       else "no value (see the unit's notes)")
                found.append((label, f"{where}: {name} not scored", why))
        for judged, summary in (unit.get("judge") or {}).items():
            if isinstance(summary, dict) and summary.get("failed"):
                reasons = summary.get("failure_reasons") or {}
                found.append((label, f"{where}: {summary['failed']} {judged} judgements failed",
                              ", ".join(f"{k}: {v}" for k, v in reasons.items()) or "judge call failed"))
        truncated = (unit.get("notes") or {}).get("truncated")
        if truncated:
            found.append((label, f"{where}: {truncated} of {unit.get('samples', '?')} contexts truncated",
                          "prompt longer than the length's budget (HELMET cuts the context tail)"))
    for length, row in (section.get("collect") or {}).items():
        missing = [f"{name} ({', '.join(cell.get('missing') or ())})" for name, cell in (row.get("categories") or {}).items()
                   if isinstance(cell, dict) and not cell.get("complete")]
        if row.get("overall") is None:
            found.append((label, f"overall at {length} not given", "needs all seven categories complete"
                          + (f"; incomplete: {'; '.join(missing)}" if missing else "; some categories not run")))
    return found


def helmet_view(pairs: Pairs) -> BenchmarkView:
    agenticlu = any(section.get("benchmark") == "agenticlu" for _, section in pairs)
    view = BenchmarkView("helmet_agenticlu" if agenticlu else "helmet")
    labels = [label for label, _ in pairs]
    cells = {}
    for label, section in pairs:
        for unit in _units(section):
            name, value = _measure(unit)
            cells.setdefault(label, {})[f"{dataset_key(unit['dataset'])} @ {unit['length']} ({name})"] = fmt(value)
        view.issues.extend(_issues(label, section))
    view.tables.append(row_table("Headline measure per dataset and length (0-100; each dataset's own HELMET "
                                 "measure)", "dataset @ length (measure)", labels, cells))
    curves = _collect_curves(pairs)
    panels = [Panel(name, "context length", "score (0-100)", sort_lengths(x for p in by_run.values() for x in p),
                    by_run, y_range=SCALE) for name, by_run in curves.items()]
    if panels:
        view.figures.append(Figure("helmet_categories", "HELMET: overall and category scores against context length",
                                   tuple(panels), "a category is the mean of its datasets' headline measures, drawn "
                                   "only where complete; overall: the mean of all seven categories"))
        view.length_curve = {label: points for label, points in curves.get("overall", {}).items()}
        view.curve_name = "overall"
        if not any(v is not None for points in view.length_curve.values() for v in points.values()):
            # no complete overall (the embedded sample has three categories): the first category run
            first = next((name for name in OVERALL_ORDER if name in curves), None)
            if first:
                view.length_curve, view.curve_name = curves[first], first
    datasets = _dataset_panels(pairs)
    if datasets:
        view.figures.append(Figure("helmet_length", "HELMET: each dataset's headline measure against context length",
                                   tuple(datasets), "y: the dataset's own HELMET measure (in the panel title)"))
    depth = _depth_panels(pairs)
    if depth:
        view.figures.append(Figure("helmet_depth", "HELMET recall: context length x needle depth", tuple(depth),
                                   "depth: where the gold answer sits in the context (0% start, 100% end), by "
                                   "tenths; cell: mean headline measure of the recall items there"))
    return view
