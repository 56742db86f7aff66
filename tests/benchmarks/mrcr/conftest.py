from __future__ import annotations

import dataclasses

import pytest


@dataclasses.dataclass
class FakeGeneration:
    text: str
    finish_reason: str = "eos"
    tokens: tuple = ()


@dataclasses.dataclass(frozen=True)
class FakeConfig:
    context_limit: int
    max_position_embeddings: int = 0


class ScriptedBackend:
    """Answers each prompt with reply(prompt text); counts the prompts it generated for."""

    def __init__(self, tokenizer, window: int, reply):
        self.tokenizer, self.config, self.reply = tokenizer, FakeConfig(window, window), reply
        self.calls = 0

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, **_):
        self.calls += len(prompts)
        return [FakeGeneration(self.reply(self.tokenizer.decode(list(p)))) for p in prompts]


class DictJournal:
    def __init__(self):
        self.records = {}

    def get(self, key):
        return self.records.get(key)

    def put(self, key, record):
        self.records[key] = record


@pytest.fixture
def scripted():
    return ScriptedBackend


@pytest.fixture
def dict_journal():
    return DictJournal()
