from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

TINY_MODEL = Path(__file__).resolve().parents[3] / "jaxeval" / "assets" / "tiny_llama"


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY_MODEL))


@dataclasses.dataclass
class FakeGeneration:
    text: str
    finish_reason: str = "eos"


@dataclasses.dataclass
class FakeConfig:
    max_position_embeddings: int


class ScriptedBackend:
    """A backend that answers each prompt with reply(prompt_ids, seed); records every call."""

    def __init__(self, tokenizer, reply, window: int = 4096):
        self.tokenizer, self.reply = tokenizer, reply
        self.config = FakeConfig(window)
        self.path = str(TINY_MODEL)
        self.calls: list[dict] = []

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):  # the GenerateBackend contract
        self.calls.append({"n": len(prompts), "max_new_tokens": max_new_tokens, "temperature": temperature,
                           "seed": seed})
        return [FakeGeneration(self.reply(tuple(p), seed)) for p in prompts]


class FakeSemSim:
    """SemSim stand-in: a fixed similarity; records what it was asked to embed."""

    def __init__(self, value: float = 0.5):
        self.value, self.seen = value, []

    def max_similarity(self, references, prediction):
        self.seen.append((list(references), prediction))
        return self.value


class DictJournal:
    def __init__(self, records=None):
        self.records = dict(records or {})
        self.puts: list[str] = []

    def get(self, key):
        return self.records.get(key)

    def put(self, key, record):
        self.puts.append(key)
        self.records.setdefault(key, record)
