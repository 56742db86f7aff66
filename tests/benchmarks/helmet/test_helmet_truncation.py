"""Two-stage length control: Llama-2-style pre-truncation and the model-tokenizer context cut."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.helmet.templates import template_for
from jaxeval.benchmarks.helmet.truncation import OMISSION_MARKER, fit_prompt, pretruncate, render_ids
from jaxeval.errors import InputTooLongError

TEXT = " ".join(f"word{i} is here." for i in range(300))


def rag_sample(context: str) -> dict:
    return {"context": context, "question": "Which word is missing?", "demos": "DEMO BLOCK\n\n", "answer": ["x"]}


def test_fit_prompt_cuts_only_the_context_tail_at_a_token_start(tokenizer):
    template = template_for("kilt_nq")
    sample = rag_sample(TEXT)
    full = render_ids(tokenizer, template, sample, chat=False)
    fitted, shortened = fit_prompt(tokenizer, template, sample, False, input_max_length=300, generation_max_length=20)
    overflow = len(full) - 280
    offsets = tokenizer(TEXT, return_offsets_mapping=True)["offset_mapping"]
    assert fitted.raw_tokens == len(full) and fitted.removed_context_tokens == overflow
    assert shortened["context"] == TEXT[:offsets[-overflow][0]]
    text = template.completion_text(shortened)
    assert text.startswith("Use the given documents") and text.endswith("Question: Which word is missing?\nAnswer:")
    assert "DEMO BLOCK" in text
    assert len(fitted.ids) <= 280  # the generation keeps its whole budget


class GrowingTokenizer:
    """A tokenizer whose encoding of a cut prompt is one token longer than its count of the cut
    (what a merge or word-start marker at the cut does to a borrowed tokenizer: 130,973 + 100 > 131,072)."""

    def __init__(self, inner):
        self.inner, self.is_fast = inner, True

    def __call__(self, text, **kwargs):
        out = dict(self.inner(text, **kwargs))
        if "Question:" in text and "word299 is here." not in text:
            out["input_ids"] = list(out["input_ids"]) + [0]
        return out


def test_a_re_encoding_that_grows_is_cut_again_to_leave_the_whole_generation_budget(tokenizer):
    template, sample = template_for("kilt_nq"), rag_sample(TEXT)
    growing = GrowingTokenizer(tokenizer)
    full = render_ids(growing, template, sample, chat=False)
    fitted, shortened = fit_prompt(growing, template, sample, False, input_max_length=300, generation_max_length=20)
    assert len(fitted.ids) == 280 and fitted.raw_tokens == len(full)
    assert fitted.removed_context_tokens == len(full) - 280 + 1  # the first cut, then the one token it grew by
    assert len(render_ids(growing, template, shortened, chat=False)) == 280


def test_fit_prompt_leaves_short_prompts_alone(tokenizer):
    template = template_for("kilt_nq")
    fitted, shortened = fit_prompt(tokenizer, template, rag_sample("short"), False, 8192, 20)
    assert fitted.removed_context_tokens == 0 and shortened["context"] == "short"


def test_chat_mode_sends_only_the_user_template(tokenizer):
    template = template_for("narrativeqa_7892")
    sample = {"context": "A story.", "question": "Who?", "demo": ""}
    text = tokenizer.decode(render_ids(tokenizer, template, sample, chat=True))
    assert text.startswith("<|im_start|>user\nYou are given a story") and text.endswith("<|im_start|>assistant\n")
    assert "Answer:" not in text and "system" not in text


def test_prompt_that_cannot_fit_raises(tokenizer):
    template = template_for("kilt_nq")
    with pytest.raises(InputTooLongError, match="even without its context"):
        fit_prompt(tokenizer, template, rag_sample("tiny"), False, 30, 20, where="f.jsonl, line 3")


def test_pretruncate_cuts_at_token_end_and_appends_marker(tokenizer):
    cut, truncated = pretruncate(TEXT, tokenizer, 50)
    marker_tokens = len(tokenizer(OMISSION_MARKER)["input_ids"])
    offsets = tokenizer(TEXT, return_offsets_mapping=True)["offset_mapping"]
    assert truncated and cut == TEXT[:offsets[50 - marker_tokens][1]] + OMISSION_MARKER
    assert pretruncate("short text", tokenizer, 50) == ("short text", False)
