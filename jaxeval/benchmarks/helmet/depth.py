"""Where the needle sits in a recall item's context (RULER-style depth), kept with its output.

Depth is the character offset of the first gold answer's first occurrence in the (possibly
shortened) context, over the context's length: 0 at the start, 1 at the end; the report bins it
by tenths. Only the recall family (JSON KV, RULER needles) has a needle; other datasets, and an
item whose answer is not found verbatim in its context, have no depth (None).
"""

from __future__ import annotations

from jaxeval.benchmarks.helmet.tasks import category

DEPTH_BINS = 10


def needle_depth(sample: dict, dataset: str) -> float | None:
    try:
        if category(dataset) != "recall":
            return None
    except (KeyError, ValueError):
        return None
    context = sample.get("context")
    gold = sample.get("answer", sample.get("outputs"))
    first = gold[0] if isinstance(gold, list) and gold else gold
    if not isinstance(context, str) or not context or not isinstance(first, str) or not first:
        return None
    at = context.find(first)
    return None if at < 0 else round(at / len(context), 4)


def depth_label(depth) -> str | None:
    """'0-10%' ... '90-100%' for a depth in [0, 1]; None for None or anything else."""
    if isinstance(depth, bool) or not isinstance(depth, (int, float)) or not 0 <= depth <= 1:
        return None
    tenth = min(int(depth * DEPTH_BINS), DEPTH_BINS - 1)
    return f"{tenth * 100 // DEPTH_BINS}-{(tenth + 1) * 100 // DEPTH_BINS}%"
