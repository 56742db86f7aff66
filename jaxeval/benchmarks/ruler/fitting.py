"""How RULER fits a haystack to a length, step for step (every generator but fwe): an estimate
call, a binary search over the haystack size with one generation per probe, then per sample a
generation at the found size, dropping by `incremental` while it is too long. Every call draws
from the task's random streams, failed probes and retries included, so the number and order of
calls is part of the samples (spec: "The length search")."""

from __future__ import annotations

import dataclasses
import random
from typing import Callable

import numpy as np


class RulerSkip(Exception):
    """A (task, length) that cannot be generated: counted in the results with its reason."""


@dataclasses.dataclass
class Streams:
    """The global RNG streams of one generator script: random.seed(seed), np.random.seed(seed)."""

    seed: int

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self.np = np.random.RandomState(self.seed)

    def fresh_shuffle(self, items: list) -> None:
        """random.Random(seed).shuffle: a new generator each time (its result depends on len only)."""
        random.Random(self.seed).shuffle(items)


def binary_search(probe_tokens: Callable[[int], int], lower: int, upper: int, budget: int, fallback: int) -> int:
    """The largest probed size with probe_tokens(size) <= budget; `fallback` if none passed."""
    best = None
    while lower <= upper:
        mid = (lower + upper) // 2
        if probe_tokens(mid) <= budget:
            best, lower = mid, mid + 1
        else:
            upper = mid - 1
    return fallback if best is None else best


def draw_fitting(make: Callable[[int], tuple], size: int, incremental: int, budget: int, what: str) -> tuple:
    """One sample: make(size) -> (..., length), then make(size - incremental), ... until its length
    <= budget. RULER retries forever at `incremental` (a bare except around the assertion); here
    that is a RulerSkip naming the task. A generator error (random.sample larger than its
    population) is retried like an over-long sample, as the bare except does."""
    while True:
        try:
            result = make(size)
            fits = result[-1] <= budget
        except (ValueError, IndexError):
            fits = False
        if fits:
            return result
        if size <= incremental:
            raise RulerSkip(f"{what}: no sample fits {budget} tokens even at the smallest haystack "
                            f"({incremental}); RULER would retry forever")
        size -= incremental


@dataclasses.dataclass(frozen=True)
class Fit:
    """One generator's length fitting: estimate at `estimate` units, bounds from the tokens per
    unit (upper(per_unit)), probes of probe(n) -> the token count of a text of n units (a probe
    passes when that plus `extra` fits), samples of sample(i, n) -> (text, answers, fields, length)."""

    incremental: int
    estimate: int
    upper: Callable[[float], int]
    probe: Callable[[int], int]
    extra: int
    sample: Callable[[int, int], tuple]


def fit_and_draw(fit: Fit, budget: int, count: int, what: str) -> tuple[int, list[tuple], str | None]:
    """(haystack size found, samples, why the rest are missing or None) in RULER's call order.
    The samples before one that cannot fit are kept (RULER never gets past it, so none after it
    exist); the search itself failing raises RulerSkip."""
    per_unit = fit.probe(fit.estimate) / fit.estimate
    size = binary_search(lambda n: fit.probe(n) + fit.extra, fit.incremental, fit.upper(per_unit), budget,
                         fit.incremental)
    drawn = []
    for i in range(count):
        try:
            drawn.append(draw_fitting(lambda n, i=i: fit.sample(i, n), size, fit.incremental, budget, f"{what} sample {i}"))
        except RulerSkip as stuck:
            return size, drawn, str(stuck)
    return size, drawn, None
