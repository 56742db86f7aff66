"""Prompts: the official template filled once, then (except for six sets) a chat format.

The template is filled with str.format, which substitutes in a single pass: braces inside a
context (code often has "{input}") are never read as fields. The chat format wraps the prompt
*after* truncation (truncation.py); trec, triviaqa, samsum, lsht, lcc and repobench-p are
few-shot or code continuations and are never wrapped.

Chat formats (record the one used: it changes the numbers):
- "model": the tokenizer's own chat template, one user turn plus the generation prompt,
  encoded without added special tokens (the template writes them, as transformers'
  apply_chat_template(tokenize=True) does). The choice for models newer than the paper's.
- "none": the raw prompt, encoded with the tokenizer's default special tokens (BOS).
- "llama2": "[INST]" + prompt + "[/INST]", no spaces, BOS from the tokenizer: what the
  official pred.py did for Llama-2-chat (not Meta's spacing).
- "internlm": "<|User|>:" + prompt + "<eoh>\\n<|Bot|>:", as the official pred.py did.
- "auto": "model" when the tokenizer has a chat template, else "none".
The official wrappers of vicuna/longchat (FastChat), chatglm and xgen are not reproduced.
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.longbench.data import LongBenchRecord
from jaxeval.benchmarks.longbench.tasks import LongBenchTask
from jaxeval.errors import ConfigError
from jaxeval.generation import chat_text, user_turn

CHAT_FORMATS = ("auto", "model", "none", "llama2", "internlm")
_WRAPPERS = {"llama2": ("[INST]", "[/INST]"), "internlm": ("<|User|>:", "<eoh>\n<|Bot|>:")}


@dataclasses.dataclass(frozen=True)
class ChatPrompt:
    text: str
    add_special_tokens: bool  # whether encoding `text` should add the tokenizer's special tokens
    chat_format: str  # the format applied: "none" for the six continuation sets


def build_prompt(task: LongBenchTask, record: LongBenchRecord) -> str:
    """The official template filled with the record's context and input, in one pass."""
    return task.prompt_template.format(context=record.context, input=record.input)


def apply_chat_format(prompt: str, task: LongBenchTask, tokenizer, chat_format: str) -> ChatPrompt:
    """Wrap an (already truncated) prompt; chat_format must be resolved (not "auto")."""
    if task.skip_chat_template or chat_format == "none":
        return ChatPrompt(prompt, add_special_tokens=True, chat_format="none")
    if chat_format == "model":
        return ChatPrompt(chat_text(tokenizer, user_turn(prompt)), add_special_tokens=False, chat_format="model")
    if chat_format in _WRAPPERS:
        before, after = _WRAPPERS[chat_format]
        return ChatPrompt(before + prompt + after, add_special_tokens=True, chat_format=chat_format)
    raise ConfigError(f"chat_format '{chat_format}' must be resolved first (generation.resolve_chat_format)")
