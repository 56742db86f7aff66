"""Fixtures every benchmark's tests share: the embedded tokenizer, with and without a BOS."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

TINY_TOKENIZER = Path(__file__).resolve().parents[2] / "jaxeval" / "assets" / "tiny_llama"


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded tokenizer: byte-level BPE, no BOS, a ChatML chat template, EOS id 0."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY_TOKENIZER))


@pytest.fixture(scope="session")
def bos_tokenizer():
    """The embedded tokenizer made to add <|endoftext|> (id 0) as a BOS, like a Llama tokenizer,
    and without a chat template."""
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer.from_file(str(TINY_TOKENIZER / "tokenizer.json"))
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|endoftext|> $A", pair="<|endoftext|> $A $B",
                                      special_tokens=[("<|endoftext|>", 0)]),
    ])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>",
                                   bos_token="<|endoftext|>")


# Scripted generation backends and an in-memory journal (MRCR and LongBench v2 runner tests)
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
    """An in-memory journal: records JSON round-tripped, as the file journal returns them."""

    def __init__(self):
        self.records = {}

    def get(self, key):
        return self.records.get(key)

    def put(self, key, record):
        self.records[key] = json.loads(json.dumps(record))


@pytest.fixture
def scripted():
    return ScriptedBackend


@pytest.fixture
def dict_journal():
    return DictJournal()
