"""Scoring as the official eval.py does it, and the README's category averages.

Per sample: for trec, triviaqa, samsum and lsht, the prediction's first line only (after
leading "\\n"); then the max of the dataset's metric over the gold answers, starting at 0.0.
Per dataset: v1 is round((100 * sum) / N, 2) with a sequential float sum; LongBench-E is,
per length bucket of the record's `length` field, round(100 * numpy.mean(scores), 2),
NaN for an empty bucket. Reference: THUDM/LongBench@2e00731 LongBench/eval.py, scorer and
scorer_e (docs/provenance.md#longbench).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from jaxeval.benchmarks.longbench.metrics import DEFAULT_OPTIONS, METRICS, ScoringOptions
from jaxeval.benchmarks.longbench.tasks import BUCKETS, LANGUAGE_TABLES, TASKS, category_members
from jaxeval.errors import DataError

AVERAGE = "Avg"  # the README's name for a language's mean over its categories


@dataclasses.dataclass(frozen=True)
class PredictionRow:
    """One line of the official pred.py output (and of ours)."""

    pred: str
    answers: tuple[str, ...]
    all_classes: tuple[str, ...] | None
    length: int | None  # only LongBench-E needs it
    origin: str = dataclasses.field(default="", compare=False)  # file and line, for messages


def first_line(prediction: str) -> str:
    """Text before the first "\\n", once leading "\\n" are gone (spaces and "\\r" stay)."""
    return prediction.lstrip("\n").split("\n")[0]


def score_sample(dataset: str, prediction: str, answers: Sequence[str], all_classes=None,
                 options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    task = TASKS[dataset]
    metric = METRICS[task.metric]
    if task.first_line_only:
        prediction = first_line(prediction)
    score = 0.0
    for ground_truth in answers:
        score = max(score, metric(prediction, ground_truth, all_classes, options))
    return score


def score_rows(dataset: str, rows: Sequence[PredictionRow],
               options: ScoringOptions = DEFAULT_OPTIONS) -> list[float]:
    """Per-sample scores. all_classes is the last row's for every row, as eval.py reads it."""
    if not rows:
        return []
    all_classes = rows[-1].all_classes
    scores = []
    for row in rows:
        try:
            scores.append(score_sample(dataset, row.pred, row.answers, all_classes, options))
        except DataError as error:
            raise DataError(f"{row.origin or dataset}: {error}") from None
    return scores


def v1_score(sample_scores: Sequence[float]) -> float:
    """round((100 * sum) / N, 2). The sum is sequential on purpose: Python >= 3.12's sum()
    compensates rounding errors, which the official Python did not."""
    if not sample_scores:
        raise DataError("no samples to score")
    total = 0.0
    for score in sample_scores:
        total += score
    return round(100 * total / len(sample_scores), 2)


def length_bucket(length: int) -> str:
    """LongBench-E bucket of a record's precomputed `length` (words or characters, never tokens)."""
    if length < 4000:
        return BUCKETS[0]
    if length < 8000:
        return BUCKETS[1]
    return BUCKETS[2]


def bucket_sample_scores(sample_scores: Sequence[float], lengths: Sequence[int]) -> dict[str, list[float]]:
    by_bucket: dict[str, list[float]] = {bucket: [] for bucket in BUCKETS}
    for score, length in zip(sample_scores, lengths, strict=True):
        by_bucket[length_bucket(length)].append(score)
    return by_bucket


def e_scores(sample_scores: Sequence[float], lengths: Sequence[int]) -> dict[str, float]:
    """{"0-4k": x, "4-8k": y, "8k+": z}: numpy's pairwise mean, times 100, numpy's rounding;
    NaN where a bucket is empty (numpy's mean of nothing, without its warning)."""
    return {bucket: float(round(100 * np.mean(scores), 2)) if scores else math.nan
            for bucket, scores in bucket_sample_scores(sample_scores, lengths).items()}


def category_scores(scores: dict[str, float], language_table: str) -> dict[str, float | None]:
    """One README table (en or zh): each category is the mean of its datasets' scores, "Avg"
    the mean of the categories; None where a dataset (or category) was not scored.

    The README does not say whether it averaged rounded or unrounded dataset scores (its
    numbers fit both to within about 0.07); this averages the rounded ones result.json
    holds, so anyone can recompute them. Means are rounded to 2 decimals once, at the end.
    """
    if language_table not in LANGUAGE_TABLES:
        raise DataError(f"unknown language table '{language_table}'; available: {', '.join(LANGUAGE_TABLES)}")
    means: dict[str, float | None] = {}
    for category, members in category_members(language_table).items():
        values = [scores.get(name) for name in members]
        means[category] = None if None in values else sum(values) / len(values)
    categories = list(means.values())
    means[AVERAGE] = None if None in categories else sum(categories) / len(categories)
    return {name: None if mean is None else round(mean, 2) for name, mean in means.items()}


def e_bucket_averages(scores: dict[str, dict[str, float]], datasets: Sequence[str]) -> dict[str, float | None]:
    """Mean over `datasets` of each bucket's score (the paper's length curve); None when a
    dataset is missing. Not part of the official eval, which writes per-dataset buckets only."""
    averages: dict[str, float | None] = {}
    for bucket in BUCKETS:
        values = [scores[name][bucket] for name in datasets if name in scores]
        averages[bucket] = (round(sum(values) / len(values), 2)
                            if len(values) == len(datasets) and datasets else None)
    return averages
