"""Prompts: context + four newlines + question, stripped, cut in the middle, one user turn.

- Question field: `question_nonthinking` for non-thinking scores; for thinking scores
  `question_thinking` for instruct models only, while native thinking and mixed models get
  `question_nonthinking` with their reasoning switched on (chat-template `enable_thinking`).
- Truncation (official): the whole stripped message, tokenised with the Qwen2.5 tokenizer (no
  special tokens added; Qwen adds none), is cut to L tokens when longer: the first L//2 and
  the last ceil(L/2) ids, decoded together with special tokens skipped (a split multi-byte
  character becomes U+FFFD; literal special-token text vanishes on this path only).
- Then jaxeval's own step: the chat-formatted prompt in the model's tokens must leave room for
  the output budget in the model's window; when it does not, the message is cut again in the
  middle, by the same rule, in the model's own tokens (recorded per sample).
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.longbench_pro.data import LongBenchProRecord
from jaxeval.benchmarks.longbench_pro.tasks import MODEL_TYPES, MODES
from jaxeval.errors import ConfigError, InputTooLongError
from jaxeval.generation import chat_prompt_ids, cut_middle, encode, resolve_chat_format, user_turn

CHAT_FORMATS = ("auto", "model", "none")
JOIN = "\n\n\n\n"


def question_field(mode: str, model_type: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"unknown LongBench Pro mode {mode!r}; available: {', '.join(MODES)}")
    if model_type not in MODEL_TYPES:
        raise ConfigError(f"unknown model type {model_type!r}; available: {', '.join(MODEL_TYPES)}")
    return "question_thinking" if mode == "thinking" and model_type == "Instruct" else "question_nonthinking"


def reasoning_enabled(mode: str, model_type: str) -> bool:
    """Whether the model's native reasoning is on: thinking scores of Thinking and Mixed models."""
    return mode == "thinking" and model_type != "Instruct"


def user_message(record: LongBenchProRecord, field: str) -> str:
    return (record.context + JOIN + getattr(record, field)).strip()


def check_truncation_length(limit) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 2:
        raise ConfigError(f"the truncation length must be an integer of at least 2 tokens, got {limit!r}")


def middle_truncate(text: str, tokenizer, limit: int) -> tuple[str, int, bool]:
    """(text cut to `limit` tokens of `tokenizer` as the official harness cuts, tokens before, cut?)."""
    check_truncation_length(limit)
    ids = encode(tokenizer, text, add_special_tokens=False)
    if len(ids) <= limit:
        return text, len(ids), False
    return cut_middle(tokenizer, ids, limit // 2, limit - limit // 2, decode_apart=False), len(ids), True


@dataclasses.dataclass(frozen=True)
class PromptSettings:
    mode: str = "nonthinking"
    model_type: str = "Instruct"
    truncation_length: int = 120_000  # L, in tokens of the truncation tokenizer
    max_new_tokens: int = 1024
    chat_format: str = "auto"  # "model": the tokenizer's chat template; "none": the raw message

    def __post_init__(self):
        question_field(self.mode, self.model_type)
        check_truncation_length(self.truncation_length)
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ConfigError(f"the output budget must be a positive integer of tokens, got {self.max_new_tokens!r}")
        if self.chat_format not in CHAT_FORMATS:
            raise ConfigError(f"unknown chat_format {self.chat_format!r}; available: {', '.join(CHAT_FORMATS)}")


@dataclasses.dataclass(frozen=True)
class BuiltPrompt:
    ids: tuple[int, ...]
    message_tokens: int  # tokens of the message before truncation (truncation tokenizer)
    truncated: bool  # cut to L (the official step)
    window_truncated: bool  # cut again to fit the model's own window (jaxeval's step)
    chat_format: str


def chat_ids(message: str, tokenizer, chat_format: str, reasoning: bool | None) -> list[int]:
    """The model's prompt ids for one user turn (chat_format resolved: "model" or "none")."""
    if chat_format == "none":
        return encode(tokenizer, message, add_special_tokens=True)
    kwargs = {} if reasoning is None else {"enable_thinking": reasoning}
    return chat_prompt_ids(tokenizer, user_turn(message), **kwargs)


def build_prompt(record: LongBenchProRecord, settings: PromptSettings, model_tokenizer, truncation_tokenizer,
                 window: int) -> BuiltPrompt:
    """Prompt ids for one record: official cut to L, chat format, then the model's window."""
    chat_format = resolve_chat_format(settings.chat_format, model_tokenizer)
    reasoning = reasoning_enabled(settings.mode, settings.model_type) if settings.model_type == "Mixed" else None
    message, raw_tokens, truncated = middle_truncate(
        user_message(record, question_field(settings.mode, settings.model_type)), truncation_tokenizer,
        settings.truncation_length)
    ids = chat_ids(message, model_tokenizer, chat_format, reasoning)
    room = window - settings.max_new_tokens
    window_truncated = len(ids) > room
    if window_truncated:
        overhead = len(ids) - len(encode(model_tokenizer, message, add_special_tokens=False))
        if room - overhead < 2:
            raise InputTooLongError(f"{record.origin} (id '{record.id}'): the model's window of {window} tokens "
                                    f"leaves no room for the prompt after {settings.max_new_tokens} output tokens")
        message, _, _ = middle_truncate(message, model_tokenizer, room - overhead)
        ids = chat_ids(message, model_tokenizer, chat_format, reasoning)
        while len(ids) > room:  # decode-then-encode may add a token or two at the seam
            message, _, _ = middle_truncate(message, model_tokenizer, len(encode(model_tokenizer, message, False)) - 1)
            ids = chat_ids(message, model_tokenizer, chat_format, reasoning)
    return BuiltPrompt(tuple(ids), raw_tokens, truncated, window_truncated, chat_format)


def split_reasoning(output: str, reasoning: bool) -> tuple[str, str | None]:
    """(scored content, reasoning). With reasoning on, the content is what follows the last
    "</think>"; a reasoning block that never closes leaves no content (scored as empty)."""
    if not reasoning:
        return output.strip(), None
    end = output.rfind("</think>")
    if end == -1:
        return "", output
    return output[end + len("</think>"):].strip(), output[:end].replace("<think>", "", 1).strip()
