"""HELMET's two-stage length control: data.py truncate_llama2, then model_utils.py tokenize
(docs/provenance.md#helmet, quirk P3).

1. Pre-truncation of LongQA / summarisation documents to N Llama-2 tokens (N = the dataset
   name's suffix): tokenized WITH special tokens (Llama-2 adds BOS), and when longer than N the
   text is cut at the END character of token N - len(marker tokens) (marker tokens also
   counted with BOS) and the marker " ... [the rest of the text is omitted]" is appended.
2. Inference truncation with the evaluated model's tokenizer: the full rendered prompt (chat
   template and special tokens included) of T tokens must fit L - G. When it does not,
   overflow = T - (L - G); the context alone (tokenized with default special tokens) is cut at
   the START character of its token `overflow` positions from the end, and the prompt is
   rendered once more. Upstream stops there, unchecked; but a tokenizer may encode the cut
   context plus the text after it into more tokens than it counted (a merge across the cut, a
   word-start marker the cut exposes), leaving the prompt a token or two over L - G and the
   generation short of its budget. Here the re-rendered prompt is checked, and cut further by
   its excess until it fits: a prompt upstream would have fitted is cut exactly as upstream.
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.helmet.templates import Template
from jaxeval.errors import ConfigError, InputTooLongError
from jaxeval.generation import chat_prompt_ids, has_chat_template, user_turn

OMISSION_MARKER = " ... [the rest of the text is omitted]"
MAX_RECUTS = 8  # re-encoding grows by a token or two at a cut; more means a tokenizer that never settles


def _offsets(tokenizer, text: str) -> list[tuple[int, int]]:
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError("HELMET truncation needs a fast (HF tokenizers) tokenizer with offset mapping")
    return list(tokenizer(text, return_offsets_mapping=True, truncation=False)["offset_mapping"])


def pretruncate(context: str, tokenizer, max_tokens: int, marker: str = OMISSION_MARKER) -> tuple[str, bool]:
    """Stage 1: (context, truncated?) cut to max_tokens of `tokenizer` (Llama-2 upstream)."""
    offsets = _offsets(tokenizer, context)
    if len(offsets) <= max_tokens:
        return context, False
    marker_length = len(tokenizer(marker)["input_ids"])
    return context[:offsets[max_tokens - marker_length][1]] + marker, True


def render_ids(tokenizer, template: Template, sample: dict, chat: bool) -> list[int]:
    """Token ids of the prompt: the user template as one chat turn, or the completion text."""
    if chat:
        if not has_chat_template(tokenizer):
            raise ConfigError("this HELMET dataset is prompted with a chat template and the tokenizer has none "
                              "(--helmet_no_chat_template prompts it as a completion)")
        return chat_prompt_ids(tokenizer, user_turn(template.user_text(sample)))
    return list(tokenizer(template.completion_text(sample))["input_ids"])


@dataclasses.dataclass(frozen=True)
class FittedPrompt:
    ids: list[int]
    raw_tokens: int  # before truncation
    removed_context_tokens: int  # the overflow cut from the context (0: none)


def fit_prompt(tokenizer, template: Template, sample: dict, chat: bool, input_max_length: int,
               generation_max_length: int, where: str = "") -> tuple[FittedPrompt, dict]:
    """Stage 2: (the fitted prompt, the sample with its possibly shortened context)."""
    ids = render_ids(tokenizer, template, sample, chat)
    budget = input_max_length - generation_max_length
    if len(ids) <= budget:
        return FittedPrompt(ids, len(ids), 0), sample
    raw, removed, shortened = len(ids), 0, sample
    for _ in range(MAX_RECUTS):
        overflow = len(ids) - budget
        offsets = _offsets(tokenizer, shortened["context"])
        if overflow > len(offsets):
            raise InputTooLongError(f"{where}: the prompt has {raw} tokens; even without its context it does "
                                    f"not fit input_max_length {input_max_length} - generation {generation_max_length}")
        shortened = dict(shortened, context=shortened["context"][:offsets[-overflow][0]])
        removed += overflow
        ids = render_ids(tokenizer, template, shortened, chat)
        if len(ids) <= budget:
            return FittedPrompt(ids, raw, removed), shortened
    raise InputTooLongError(f"{where}: the prompt still has {len(ids)} tokens after cutting its context "
                            f"{MAX_RECUTS} times; it does not fit input_max_length {input_max_length} - "
                            f"generation {generation_max_length}")
