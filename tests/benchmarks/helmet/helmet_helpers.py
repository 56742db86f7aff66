"""Helpers of the HELMET tests: paths, a fake judge, a fake generating model."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Sequence

REPO = Path(__file__).resolve().parents[3]
TINY = REPO / "jaxeval" / "assets" / "tiny_llama"
SAMPLE = REPO / "jaxeval" / "assets" / "helmet_sample"


@dataclasses.dataclass(frozen=True)
class Reply:
    """Same shape as jaxeval.judges.base.JudgeReply."""
    text: str | None
    error: str | None


class FakeJudge:
    """Answers each prompt with answer(prompt): a string, or None for a failed call."""

    def __init__(self, answer: Callable[[str], str | None]):
        self.answer = answer
        self.prompts: list[str] = []

    def complete(self, prompts: Sequence[str]) -> list[Reply]:
        self.prompts += list(prompts)
        out = []
        for p in prompts:
            text = self.answer(p)
            out.append(Reply(text, None if text is not None else "HTTP 500"))
        return out

    def settings(self) -> dict:
        return {"backend": "fake"}


@dataclasses.dataclass
class Generation:
    tokens: list[int]
    text: str


class FakeModel:
    """Generates `reply` (encoded with the tokenizer) for every prompt; records the calls."""

    def __init__(self, tokenizer, reply: str = " 42"):
        self.tokenizer = tokenizer
        self.reply = reply
        self.calls: list[dict] = []
        self.path = "fake"

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):  # the GenerateBackend contract
        self.calls.append({"n": len(prompts), "max_new_tokens": max_new_tokens, "stop": stop,
                           "temperature": temperature, "prompts": prompts})
        ids = self.tokenizer(self.reply, add_special_tokens=False)["input_ids"]
        return [Generation(list(ids), self.reply) for _ in prompts]
