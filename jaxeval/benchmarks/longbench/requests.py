"""Generation requests for the engine: prompt ids, token budget and stop rule per record.

Decoding is greedy. Generation stops at the model's EOS; samsum also stops at a newline (its
few-shot prompt otherwise makes models write "\\nDialogue: ..." forever). The official pred.py
does this with generate(eos_token_id=[EOS, id of "\\n"], min_length=prompt length + 1): the id
of "\\n" is the last id of encoding "\\n" without special tokens, and neither id can be chosen
as the first new token. samsum's requests carry exactly that (stop_token_ids, min_new_tokens=1)
and no stop string: a token that merely contains a newline ("\\n\\n") does not stop it.
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.longbench.data import LongBenchRecord
from jaxeval.benchmarks.longbench.prompts import apply_chat_format, build_prompt
from jaxeval.benchmarks.longbench.tasks import TASKS, dataset_of_config
from jaxeval.benchmarks.longbench.truncation import truncate_middle
from jaxeval.generation import encode

NEWLINE_STOP_DATASETS = ("samsum",)
SPLIT = "test"  # LongBench's only split


@dataclasses.dataclass(frozen=True)
class GenerationRequest:
    key: tuple[str, str, str, int, str]  # (benchmark, config, split, index in file, _id): stable
    dataset: str  # v1 name ("qasper" for qasper_e too)
    prompt_ids: tuple[int, ...]  # final prompt tokens, chat format and special tokens included
    max_new_tokens: int
    stop: tuple[str, ...] | None  # stop strings beyond EOS (none of LongBench's datasets has one)
    stop_token_ids: tuple[int, ...] | None  # samsum: (EOS, id of "\n"), as the official code
    min_new_tokens: int  # samsum: 1 (no stop before one token is out), else 0
    chat_format: str  # applied: "none" for the continuation sets
    raw_prompt_tokens: int  # tokens of the filled template before truncation
    truncated: bool


def newline_stop_ids(tokenizer) -> tuple[int, ...]:
    """The official samsum stop set: the EOS id and the last id of encoding "\\n"."""
    newline = encode(tokenizer, "\n", add_special_tokens=False)[-1]
    eos = tokenizer.eos_token_id
    return (newline,) if eos is None else (eos, newline)


def build_request(record: LongBenchRecord, tokenizer, max_length: int, chat_format: str,
                  benchmark: str) -> GenerationRequest:
    """One record's request; chat_format must be resolved (jaxeval.generation.resolve_chat_format)."""
    dataset = dataset_of_config(record.config)
    task = TASKS[dataset]
    truncated = truncate_middle(build_prompt(task, record), tokenizer, max_length)
    chat = apply_chat_format(truncated.text, task, tokenizer, chat_format)
    newline_stop = dataset in NEWLINE_STOP_DATASETS
    return GenerationRequest(
        key=(benchmark, record.config, SPLIT, record.index, record.id),
        dataset=dataset,
        prompt_ids=tuple(encode(tokenizer, chat.text, add_special_tokens=chat.add_special_tokens)),
        max_new_tokens=task.max_new_tokens,
        stop=None,
        stop_token_ids=newline_stop_ids(tokenizer) if newline_stop else None,
        min_new_tokens=1 if newline_stop else 0,
        chat_format=chat.chat_format,
        raw_prompt_tokens=truncated.raw_tokens,
        truncated=truncated.truncated,
    )
