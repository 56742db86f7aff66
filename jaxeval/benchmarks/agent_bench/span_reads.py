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


def read_spans_many(backend, texts, batch_size: int = 1) -> list[list[SpanRead | None]]:
    """Per (ids, span_positions) text (span_positions: per span the token positions it covers, or None
    when unaligned), per span a SpanRead or None: one read per text with an aligned span.
    batch_size > 1: texts of one length bucket are read several per step where the backend batches
    (jaxeval.engine.batch_read), with the same results."""
    requests = []  # (text index, ids, positions, tokens)
    for n, (ids, span_positions) in enumerate(texts):
        positions = np.asarray([p for span in span_positions if span is not None for p in span], dtype=np.int32)
        if len(positions):
            requests.append((n, ids, positions, ids[positions]))  # the true next token at each read position
    results = backend.read_many([(ids, positions, tokens) for _, ids, positions, tokens in requests],
                                batch_size=batch_size, share_prefixes=False).results
    out: list[list[SpanRead | None]] = [[None] * len(span_positions) for _, span_positions in texts]
    for (n, _, positions, tokens), result in zip(requests, results):
        out[n] = _spans(texts[n][1], positions, tokens, result)
    return out


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
