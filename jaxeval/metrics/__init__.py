"""Shared metric functions: pure, host-side, no JAX.

Each module reproduces one upstream implementation exactly, quirks included, because the
benchmarks that use them are compared digit for digit with their official numbers.
"""

from jaxeval.metrics.edit_similarity import fuzz_ratio
from jaxeval.metrics.rouge_pltrdy import (
    RougeInputError, RougeRecursionError, lcs_walk, rouge_l_summary_f, rouge_sentences,
)
from jaxeval.metrics.token_f1 import (
    CHINESE_PUNCTUATION, normalize_answer_en, normalize_token_zh, token_f1,
)

__all__ = [
    "CHINESE_PUNCTUATION", "RougeInputError", "RougeRecursionError", "fuzz_ratio", "lcs_walk",
    "normalize_answer_en", "normalize_token_zh", "rouge_l_summary_f", "rouge_sentences", "token_f1",
]
