"""Fixtures of the HELMET tests."""

from __future__ import annotations

import pytest

from helmet_helpers import TINY


@pytest.fixture(scope="session")
def tokenizer():
    """The embedded tokenizer: fast byte-level BPE, no BOS, a ChatML chat template."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TINY))
