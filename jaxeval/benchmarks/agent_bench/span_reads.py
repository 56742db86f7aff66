"""One backend read per text for every aligned span of it: is each span all top-1, and its log-prob."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class SpanRead:
    correct: bool  # every covered token is the model's top-1
    logprob: float  # summed over the covered tokens
    tokens: int
    correct_tokens: int


def read_spans(backend, ids: np.ndarray, span_positions) -> list[SpanRead | None]:
    """span_positions: per span the token positions it covers, or None (unaligned) -> per span a SpanRead or None."""
    positions = np.asarray([p for span in span_positions if span is not None for p in span], dtype=np.int32)
    if not len(positions):
        return [None] * len(span_positions)
    tokens = ids[positions]  # the true next token at each read position
    result = backend.read(ids, positions, tokens)
    top1 = np.asarray(result.top1).reshape(-1)
    logprobs = np.asarray(result.logprobs, dtype=np.float64).reshape(-1)
    if top1.shape != positions.shape or logprobs.shape != positions.shape:
        raise ValueError(f"backend returned {top1.shape} / {logprobs.shape} results for "
                         f"{positions.shape[0]} read positions")
    reads, cursor = [], 0
    for span in span_positions:
        if span is None:
            reads.append(None)
            continue
        window = slice(cursor, cursor + len(span))
        hits = top1[window] == tokens[window]
        reads.append(SpanRead(bool(hits.all()), float(logprobs[window].sum()), len(span), int(hits.sum())))
        cursor += len(span)
    return reads
