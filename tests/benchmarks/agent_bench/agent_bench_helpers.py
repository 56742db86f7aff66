"""Helpers of the longctx-agent-bench tests: hand-made items, files, fake backends."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jaxeval.engine.backend import LanguageModel, ReadResult, SharedReads

REPO = Path(__file__).resolve().parents[3]
TINY_TOKENIZER = REPO / "jaxeval" / "assets" / "tiny_llama"
FILLER = "The lobster lives in the eastern Atlantic Ocean , off Norway . "


def facts_record(item_id: str = "hand-000", facts=(("Fiona booked flight", "48213"),
                                                   ("Marcus paid invoice", "70112")),
                 filler_repeats: int = 12) -> dict:
    """A short facts item: filler, the facts, more filler, then the queries in the same order."""
    text, fact_spans = FILLER, []
    for prefix, number in facts:
        fact = f"{prefix} {number}."
        fact_spans.append((len(text), len(text) + len(fact), fact))
        text += fact + " " + FILLER
    text += FILLER * filler_repeats
    targets = []
    for (prefix, number), (fact_start, fact_end, fact) in zip(facts, fact_spans):
        query_prefix, answer = f"Do you remember ? {prefix}", f" {number}."
        start = len(text) + len(query_prefix)
        text += query_prefix + answer + " " + FILLER
        targets.append({"answer_char": [start, start + len(answer)], "answer": answer,
                        "fact_char": [fact_start, fact_end], "fact": fact, "distance_tokens": 150})
    return {"id": item_id, "text": text, "targets": targets,
            "source": {"dataset": "hand", "config": "none", "split": "test", "articles": ["Lobster"]}}


def write_parquet(folder: Path, records: list[dict], config: str = "facts", split: str = "8k") -> Path:
    path = folder / config / f"{split}-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path)
    return path


def write_jsonl(folder: Path, records: list[dict], config: str = "facts", split: str = "8k") -> Path:
    path = folder / config / f"{split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


class OracleBackend(LanguageModel):
    """Top-1 is always the true next token; every read token has log-prob -0.5 (exact in binary)."""

    max_length = None  # no bound unless given

    def __init__(self, max_length: int | None = None):
        self.calls: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.config, self.tokenizer, self.max_length = None, None, max_length

    def read_many(self, requests, *, batch_size=1, share_prefixes=True):
        """One read() per request, in order (no prefix shared: every input counted)."""
        requests = list(requests)
        tokens = sum(int(np.max(positions)) for _, positions, _ in requests)
        return SharedReads([self.read(*r) for r in requests], tokens, tokens, 0)

    def read(self, ids, positions, tokens):
        ids, positions, tokens = np.asarray(ids), np.asarray(positions), np.asarray(tokens)
        self.calls.append((ids, positions, tokens))
        return ReadResult(top1=self.top1(ids, positions), logprobs=np.full(len(positions), -0.5, np.float32))

    def top1(self, ids, positions):
        return ids[positions].astype(np.int32)


class WrongBackend(OracleBackend):
    """Top-1 is never the true next token."""

    def top1(self, ids, positions):
        return ((ids[positions] + 1) % 4096).astype(np.int32)


class RightOnSomeSequences(OracleBackend):
    """Right on the sequences whose first 64 ids are in `right_on`, wrong on all others."""

    def __init__(self, right_on: set[tuple[int, ...]]):
        super().__init__()
        self.right_on = right_on

    def top1(self, ids, positions):
        truth = ids[positions].astype(np.int32)
        return truth if tuple(ids[:64].tolist()) in self.right_on else truth + 1


class WrongOnToken(OracleBackend):
    """Right everywhere except where the true next token is `token_id`."""

    def __init__(self, token_id: int):
        super().__init__()
        self.token_id = token_id

    def top1(self, ids, positions):
        truth = ids[positions].astype(np.int32)
        return np.where(truth == self.token_id, truth + 1, truth)


class HashedContextBackend(OracleBackend):
    """log p of a token is a fixed pseudo-random function of the context and the token, times `scale`.

    The same context gives the same score wherever it is read, as a real model does.
    """

    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    def read(self, ids, positions, tokens):
        ids, positions, tokens = np.asarray(ids), np.asarray(positions), np.asarray(tokens)
        self.calls.append((ids, positions, tokens))
        values = [self.scale * -(zlib.crc32(ids[:p].astype(np.int64).tobytes() + bytes([int(t) % 256])) % 800) / 100
                  for p, t in zip(positions, tokens)]
        return ReadResult(top1=self.top1(ids, positions), logprobs=np.asarray(values, np.float64))
