"""Scores by distance: how far back (in tokens) the evidence of a target lies.

The card reports near/far only; a report plots score against distance, so facts and
tool_calls also record `by_distance`: the targets grouped on a fixed ladder of token
distances (the dataset builder's `distance_tokens`), with the rate and the counts of each
non-empty bucket, nearest first.
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

# Bucket edges in tokens: [0, 512), [512, 1k), [1k, 2k), ..., [32k, inf).
DISTANCE_EDGES = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768)

T = TypeVar("T")


def _label(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)


def distance_bucket(distance_tokens: int) -> str:
    """The ladder bucket of a distance, e.g. 700 -> "512-1k", 40000 -> "32k+"."""
    for low, high in zip(DISTANCE_EDGES, DISTANCE_EDGES[1:]):
        if distance_tokens < high:
            return f"{_label(low)}-{_label(high)}"
    return f"{_label(DISTANCE_EDGES[-1])}+"


def by_distance(targets: Sequence[T], distance: Callable[[T], int], aligned: Callable[[T], bool],
                correct: Callable[[T], bool], rate_name: str) -> dict[str, dict]:
    """bucket -> {rate_name: correct share of the aligned targets (None if none), scored, targets}."""
    groups: dict[str, list[T]] = {}
    for target in sorted(targets, key=distance):
        groups.setdefault(distance_bucket(distance(target)), []).append(target)
    buckets = {}
    for bucket, group in groups.items():
        scored = [t for t in group if aligned(t)]
        buckets[bucket] = {rate_name: sum(bool(correct(t)) for t in scored) / len(scored) if scored else None,
                           "scored": len(scored), "targets": len(group)}
    return buckets
