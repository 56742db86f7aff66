"""Middle truncation of the raw prompt, by tokens of the evaluated model's tokenizer.

As the official pred.py: encode the prompt *with* the tokenizer's default special tokens (a
Llama tokenizer's BOS counts), and if that is longer than max_length keep half =
floor(max_length / 2) tokens from each end (an odd max_length keeps max_length - 1), decode
each half skipping special tokens, and join the two texts directly. The BOS in the head is
dropped by the decode, so the head holds half - 1 content tokens. The text is then
re-encoded after the chat format; decode-then-encode is not an identity, so the final count
can differ by a few tokens, and the official code never re-checks it.
"""

from __future__ import annotations

import dataclasses

from jaxeval.errors import ConfigError
from jaxeval.generation import cut_middle, encode

CONTEXT_RESERVE = 500  # official budgets are the model window minus this (output + template room)


@dataclasses.dataclass(frozen=True)
class TruncatedPrompt:
    text: str
    raw_tokens: int  # tokens of the untruncated prompt, special tokens included
    truncated: bool


def truncate_middle(prompt: str, tokenizer, max_length: int,
                    count_special_tokens: bool = True) -> TruncatedPrompt:
    """The prompt, cut in the middle to at most max_length tokens (see the module doc).

    count_special_tokens=False: count without them, as the official code did for chatglm3 only.
    """
    if not isinstance(max_length, int) or max_length < 2:
        raise ConfigError(f"max_length must be an integer of at least 2 tokens, got {max_length!r}")
    ids = encode(tokenizer, prompt, add_special_tokens=count_special_tokens)
    if len(ids) <= max_length:
        return TruncatedPrompt(prompt, raw_tokens=len(ids), truncated=False)
    half = int(max_length / 2)
    return TruncatedPrompt(cut_middle(tokenizer, ids, half, half, decode_apart=True), raw_tokens=len(ids),
                           truncated=True)


def prompt_budget(model_window: int) -> int:
    """max_length for a model with this context window, by the official rule (window - 500)."""
    budget = model_window - CONTEXT_RESERVE
    if budget < 2:
        raise ConfigError(f"a context window of {model_window} tokens leaves no room for LongBench "
                          f"prompts after reserving {CONTEXT_RESERVE}; pass max_length explicitly")
    return budget
