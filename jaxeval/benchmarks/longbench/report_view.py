"""LongBench and LongBench-E in `jaxeval report`: scores per dataset, pooled by prompt length (v1)
or per official length bucket (E). Takes [(run label, section)] for the runs that have the task."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.report.data import (
    MISSING, BenchmarkView, Figure, Panel, Table, fmt, number, row_table, sort_lengths,
)

Pairs = Sequence[tuple[str, Any]]

LONGBENCH_LENGTH_BINS = ((4096, "0-4k"), (8192, "4-8k"), (16384, "8-16k"), (32768, "16-32k"))


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
    view.tables.append(row_table("Scores per dataset (0-100) and category averages", "dataset", labels, cells))
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
        view.length_curve, view.curve_name = by_run, "mean sample score, datasets pooled"
    else:
        view.notes.append("no per-sample outputs in these results: no LongBench length plot "
                          "(LongBench-E reports scores by length)")
    for label, section in pairs:
        view.issues.extend(_issues(label, section))
    return view


def _issues(label: str, section: dict) -> list[tuple[str, str, str]]:
    """Truncated prompts and empty length buckets, per dataset."""
    found = []
    truncated = (section.get("prompting") or {}).get("truncated") or {}
    for dataset, count in truncated.items():
        if count:
            found.append((label, f"{dataset}: {count} prompts truncated", "longer than the model's budget: middle "
                          "truncation (official pred.py)"))
    empty_by_buckets: dict[str, list[str]] = {}  # datasets grouped by their empty buckets: one row each
    for dataset, score in (section.get("scores") or {}).items():
        if isinstance(score, dict):
            empty = [bucket for bucket, value in score.items() if number(value) is None]
            if empty:
                empty_by_buckets.setdefault(", ".join(empty), []).append(dataset)
    for buckets, datasets in empty_by_buckets.items():
        found.append((label, f"{len(datasets)} datasets ({', '.join(datasets)}): no score at {buckets}",
                      "no sample of that length bucket in the data run (NaN, as the official eval.py writes)"))
    return found


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
        view.length_curve, view.curve_name = panels[0].by_run, "average over datasets"
    for label, section in pairs:
        view.issues.extend(_issues(label, section))
    return view
