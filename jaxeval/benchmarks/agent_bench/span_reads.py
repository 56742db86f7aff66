"""One backend read per text for every aligned span of it: is each span all top-1, and its log-prob."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxeval.benchmarks.loop import Read


@dataclasses.dataclass(frozen=True)
class SpanRead:
    correct: bool  # every covered token is the model's top-1
    logprob: float  # summed over the covered tokens
    tokens: int
    correct_tokens: int


def span_read(ids, span_positions) -> Read | None:
    """The one read of a text (span_positions: per span the token positions it covers, or None when
    unaligned): every aligned span's positions, each with the true next token; None when no span
    is aligned (nothing to read)."""
    positions = np.asarray([p for span in span_positions if span is not None for p in span], dtype=np.int32)
    if not len(positions):
        return None
    return Read(ids, positions, ids[positions])


def spans_of(span_positions, request: Read | None, result) -> list[SpanRead | None]:
    """Per span a SpanRead from the text's read (None: unaligned, or no read at all)."""
    if request is None:
        return [None] * len(span_positions)
    return _spans(span_positions, request.positions, request.tokens, result)


def _spans(span_positions, positions: np.ndarray, tokens: np.ndarray, result) -> list[SpanRead | None]:
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
