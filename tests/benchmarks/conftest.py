"""Fixtures every benchmark's tests share: the embedded tokenizer, with and without a BOS."""

from __future__ import annotations

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
