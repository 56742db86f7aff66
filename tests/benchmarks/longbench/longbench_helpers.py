"""Helpers of the LongBench tests: paths, hand-made records and prediction files, fake backends."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data"
TINY_TOKENIZER = REPO / "jaxeval" / "assets" / "tiny_llama"
VECTORS = json.loads((DATA / "longbench_metric_vectors.json").read_text(encoding="utf-8"))


def record(**fields) -> dict:
    """A valid record of the official schema; fields override the defaults."""
    base = {"input": "Who wrote it ?", "context": "The book was written by Ada .", "answers": ["Ada"],
            "length": 12, "dataset": "narrativeqa", "language": "en", "all_classes": None,
            "_id": "0" * 48}
    base.update(fields)
    return base


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write((row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n")
    return path


@dataclasses.dataclass
class Generation:
    text: str
    tokens: list[int]


class EchoBackend:
    """Answers every prompt with the same text (tokens from the given tokenizer); records calls."""

    def __init__(self, tokenizer, answer: str, extra_tokens=(), max_position_embeddings=None):
        self.tokenizer, self.answer = tokenizer, answer
        self.tokens = list(tokenizer.encode(answer, add_special_tokens=False)) + list(extra_tokens)
        self.calls: list[dict] = []
        if max_position_embeddings is not None:
            self.config = type("Config", (), {"max_position_embeddings": max_position_embeddings})()

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):  # the GenerateBackend contract
        self.calls.append({"prompts": prompts, "max_new_tokens": max_new_tokens, "stop": stop,
                           "stop_token_ids": stop_token_ids, "min_new_tokens": min_new_tokens})
        return [Generation(self.answer, list(self.tokens)) for _ in prompts]


class GoldBackend:
    """Answers each prompt with the gold answer of the record the prompt was built from."""

    def __init__(self, tokenizer, answers_by_prompt: dict[tuple[int, ...], str]):
        self.tokenizer, self.answers = tokenizer, answers_by_prompt

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):
        out = []
        for prompt in prompts:
            text = self.answers[tuple(prompt)]
            out.append(Generation(text, list(self.tokenizer.encode(text, add_special_tokens=False))))
        return out
