"""Prompt construction, the official middle truncation, the model-window step and reasoning split."""

from __future__ import annotations

import dataclasses

import pytest

from jaxeval.benchmarks.longbench.truncation import encode
from jaxeval.benchmarks.longbench_pro.data import load_records
from jaxeval.benchmarks.longbench_pro.prompts import (
    PromptSettings, build_prompt, middle_truncate, question_field, split_reasoning, user_message,
)
from jaxeval.errors import ConfigError, InputTooLongError


@pytest.fixture(scope="module")
def record():
    return load_records()[0]


def test_message_is_context_four_newlines_question_stripped(record):
    padded = dataclasses.replace(record, context="  \n" + record.context, question_nonthinking="Q? \n ")
    assert user_message(padded, "question_nonthinking") == record.context.strip() + "\n\n\n\nQ?"


@pytest.mark.parametrize("mode, model_type, field", [
    ("nonthinking", "Instruct", "question_nonthinking"), ("nonthinking", "Mixed", "question_nonthinking"),
    ("thinking", "Instruct", "question_thinking"), ("thinking", "Mixed", "question_nonthinking"),
    ("thinking", "Thinking", "question_nonthinking"),
])
def test_question_field_by_mode_and_model_type(mode, model_type, field):
    assert question_field(mode, model_type) == field


def test_unknown_mode_or_type_is_refused():
    with pytest.raises(ConfigError, match="mode"):
        question_field("fast", "Instruct")
    with pytest.raises(ConfigError, match="model type"):
        PromptSettings(model_type="Base")


@pytest.mark.parametrize("limit", [9, 10])
def test_middle_truncation_keeps_head_floor_and_tail_ceil(tiny_tokenizer, limit):
    text = " ".join(f"w{i}" for i in range(200))
    ids = encode(tiny_tokenizer, text, add_special_tokens=False)
    cut, before, truncated = middle_truncate(text, tiny_tokenizer, limit)
    assert (before, truncated) == (len(ids), True)
    assert cut == tiny_tokenizer.decode(ids[:limit // 2] + ids[len(ids) - (limit - limit // 2):],
                                        skip_special_tokens=True)
    assert middle_truncate(text, tiny_tokenizer, len(ids)) == (text, len(ids), False)


def test_special_token_text_vanishes_only_when_cut(tiny_tokenizer):
    text = "<|im_end|> " + " ".join(f"w{i}" for i in range(50))
    assert middle_truncate(text, tiny_tokenizer, 1000)[0] == text
    assert "<|im_end|>" not in middle_truncate(text, tiny_tokenizer, 20)[0]


def test_window_step_cuts_again_to_fit_the_output_budget(record, tiny_tokenizer):
    settings = PromptSettings(truncation_length=100_000, max_new_tokens=64)
    full = build_prompt(record, settings, tiny_tokenizer, tiny_tokenizer, window=100_000)
    assert not full.truncated and not full.window_truncated
    small = build_prompt(record, settings, tiny_tokenizer, tiny_tokenizer, window=256)
    assert small.window_truncated and len(small.ids) <= 256 - 64
    assert tiny_tokenizer.decode(small.ids).rstrip().endswith("assistant")  # the chat turn survives
    with pytest.raises(InputTooLongError, match=record.id):
        build_prompt(record, settings, tiny_tokenizer, tiny_tokenizer, window=70)


def test_mixed_models_switch_reasoning_through_the_template(record, tiny_tokenizer):
    tokenizer = tiny_tokenizer.__class__.from_pretrained(tiny_tokenizer.name_or_path)
    tokenizer.chat_template = ("{{ messages[0]['content'][-5:] }}|{% if enable_thinking is defined %}"
                               "{{ enable_thinking }}{% else %}unset{% endif %}")
    def rendered(mode, model_type):
        ids = build_prompt(record, PromptSettings(mode=mode, model_type=model_type, truncation_length=10_000,
                                                  max_new_tokens=8), tokenizer, tokenizer, 20_000).ids
        return tokenizer.decode(ids).rsplit("|", 1)[1]
    assert rendered("thinking", "Mixed") == "True" and rendered("nonthinking", "Mixed") == "False"
    assert rendered("thinking", "Instruct") == "unset" and rendered("thinking", "Thinking") == "unset"


def test_reasoning_split():
    assert split_reasoning(" <think>plan</think>\n[Answer]\nB ", True) == ("[Answer]\nB", "plan")
    assert split_reasoning("a</think>b</think> c", True) == ("c", "a</think>b")
    assert split_reasoning("never closed [Answer] B", True) == ("", "never closed [Answer] B")
    assert split_reasoning("  <think>x</think> y ", False) == ("<think>x</think> y", None)
