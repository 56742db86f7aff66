"""Fixtures of the longctx-agent-bench tests: the embedded tokenizer, with and without a BOS."""

from __future__ import annotations

import pytest

from agent_bench_helpers import TINY_TOKENIZER


@pytest.fixture(scope="session")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY_TOKENIZER))


@pytest.fixture(scope="session")
def bos_tokenizer():
    """The embedded tokenizer, made to add <|endoftext|> as a BOS in front of every text."""
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
