"""Paired comparison of two runs' per-sample scores: pairing by sample key, mean deltas and
paired bootstrap confidence intervals.

Method (stated on the report page as METHOD): the items present and scored in both runs are
paired by their journal / sample key; the delta of an item is its modified score minus its
reference score. The point estimate is the mean delta. Its confidence interval is a paired
percentile bootstrap: B times (RESAMPLES, default 1000) draw n items with replacement from the n
pairs (the same draw for both runs, so the pairing is kept), take the mean delta of the draw;
the interval is the (1 - level) / 2 and (1 + level) / 2 percentiles (numpy's linear
interpolation) of the B means. The draws come from numpy's default_rng(seed) (seed 0): a report
is reproducible to the last digit. One pair gives a zero-width interval; no pair, no interval.

A sample present in one run only, or scored in one run only (its score null), is counted and
listed, never paired and never dropped silently.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import numpy as np

from jaxeval.errors import DataError

RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
METHOD = ("paired percentile bootstrap over items: {resamples} resamples of the n paired items with "
          "replacement (numpy default_rng({seed})), mean delta (modified - reference) per resample, "
          "{low:g}th-{high:g}th percentiles as the {level:g}% interval")


def method_text(resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL) -> str:
    return METHOD.format(resamples=resamples, seed=seed, low=100 * (1 - level) / 2, high=100 * (1 + level) / 2,
                         level=100 * level)


@dataclasses.dataclass(frozen=True)
class SampleScore:
    """One sample's headline score, as a Benchmark's sample_scores hook gives it."""

    key: str  # the journal / samples key (pairs the two runs)
    group: str  # the dataset / config it belongs to (a table row of the comparison)
    length: str | None  # its context-length label ("8k", "0-4k"), None when it has none
    score: float | None  # on the benchmark's report scale; None: not scored (counted, not paired)
    depth: str | None = None  # where the evidence sits, for benchmarks that have a depth


def per_sample_rows(outputs, samples: list[dict] | None, name_field: str,
                    keyed: bool = False) -> list[tuple[object, dict]] | None:
    """(name, row) for every per-sample row of a task: from its details mapping name -> rows when
    there is one (with keyed, only when every row carries its "key"), else from the --log_samples
    rows, named by their `name_field`; None when there are neither."""
    if isinstance(outputs, dict) and outputs and (not keyed or all(
            isinstance(row, dict) and "key" in row for rows in outputs.values() for row in rows or ())):
        return [(name, row) for name, rows in outputs.items() for row in rows or ()]
    if samples:
        return [(row.get(name_field), row) for row in samples]
    return None


@dataclasses.dataclass(frozen=True)
class Delta:
    n: int  # paired items
    reference: float | None  # mean over the paired items
    modified: float | None
    delta: float | None  # modified - reference
    low: float | None  # the bootstrap interval of delta
    high: float | None


def paired_bootstrap(reference: Sequence[float], modified: Sequence[float], resamples: int = RESAMPLES,
                     seed: int = SEED, level: float = LEVEL) -> Delta:
    """The mean delta of paired scores and its paired percentile bootstrap interval (module doc)."""
    ref, mod = np.asarray(reference, dtype=np.float64), np.asarray(modified, dtype=np.float64)
    if ref.shape != mod.shape or ref.ndim != 1:
        raise ValueError(f"paired scores need two equal-length lists, got {ref.shape} and {mod.shape}")
    n = len(ref)
    if n == 0:
        return Delta(0, None, None, None, None, None)
    deltas = mod - ref
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = max(1, 4_000_000 // n)  # draws per chunk: bounded memory for large n
    for start in range(0, resamples, step):
        count = min(step, resamples - start)
        means[start:start + count] = deltas[rng.integers(0, n, size=(count, n))].mean(axis=1)
    low, high = np.percentile(means, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return Delta(n, float(ref.mean()), float(mod.mean()), float(deltas.mean()), float(low), float(high))


@dataclasses.dataclass(frozen=True)
class Pairing:
    pairs: tuple[tuple[SampleScore, SampleScore], ...]  # (reference, modified), both scored
    only_reference: tuple[SampleScore, ...]
    only_modified: tuple[SampleScore, ...]
    unscored: tuple[tuple[SampleScore, SampleScore], ...]  # in both runs, null in at least one


def _by_key(samples: Iterable[SampleScore], where: str) -> dict[str, SampleScore]:
    found: dict[str, SampleScore] = {}
    for sample in samples:
        if sample.key in found:
            raise DataError(f"{where}: sample key {sample.key!r} appears twice")
        found[sample.key] = sample
    return found


def pair(reference: Iterable[SampleScore], modified: Iterable[SampleScore], where: tuple[str, str]) -> Pairing:
    """Pair by key; `where` names the two runs for messages."""
    ref, mod = _by_key(reference, where[0]), _by_key(modified, where[1])
    pairs, unscored = [], []
    for key, sample in ref.items():
        if key in mod:
            other = mod[key]
            (unscored if sample.score is None or other.score is None else pairs).append((sample, other))
    return Pairing(tuple(pairs), tuple(s for k, s in ref.items() if k not in mod),
                   tuple(s for k, s in mod.items() if k not in ref), tuple(unscored))


def grouped_deltas(pairs: Sequence[tuple[SampleScore, SampleScore]], by, resamples: int = RESAMPLES,
                   seed: int = SEED, level: float = LEVEL) -> dict[str, Delta]:
    """name -> Delta over the pairs whose `by(reference sample)` is name (None: left out), first-seen order."""
    grouped: dict[str, list[tuple[float, float]]] = {}
    for ref, mod in pairs:
        name = by(ref)
        if name is not None:
            grouped.setdefault(name, []).append((ref.score, mod.score))
    return {name: paired_bootstrap([r for r, _ in values], [m for _, m in values], resamples, seed, level)
            for name, values in grouped.items()}
