"""MrcrTask and run_mrcr: the conversation through the model's chat template, greedy generation, the card's grade.

Each row's whole conversation (every message, the last user turn asking for the k-th needle)
goes through the tokenizer's chat template with the assistant turn opened. An item fits when its
prompt plus the output budget fits the model's window; one that does not is skipped, counted per
needle count and bin, and listed in the samples: never dropped silently. Generated samples are
journaled under "mrcr/<n>needle/<row index>/0".
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.base import limited, prompt_fields, prompt_text, run_standalone
from jaxeval.benchmarks.loop import Done, Generate, Generated, Group, Sample, Task
from jaxeval.benchmarks.mrcr.data import NEEDLES, SHIPPED_SAMPLE, MrcrRow, load_rows
from jaxeval.benchmarks.mrcr.grading import BinCounter, bin_of, grade
from jaxeval.benchmarks.mrcr.summary import format_table, summarize
from jaxeval.generation import GenerationOptions, chat_prompt_ids, encode, require_tokenizer

ANSWER_SLACK = 64  # default budget: the answer's own tokens plus this (the card sets no limit)


def sample_key(row: MrcrRow) -> str:
    return f"mrcr/{row.n_needles}needle/{row.index}/0"


def output_budget(row: MrcrRow, tokenizer, max_new_tokens: int | None) -> int:
    if max_new_tokens is not None:
        return max_new_tokens
    return len(encode(tokenizer, row.answer, add_special_tokens=False)) + ANSWER_SLACK


def select(rows: list[MrcrRow], needles, limit) -> list[MrcrRow]:
    """The first `limit` rows (or that fraction) of each needle count."""
    return [row for n in needles for row in limited([r for r in rows if r.n_needles == n], limit)]


class MrcrTask(Task):
    """MRCR on the sample loop: one group of the rows that fit the window (--limit taken per needle
    count before the fit, so a skipped row keeps its place in the count and no journal batch)."""

    def __init__(self, backend, data: str | Path = SHIPPED_SAMPLE, *, needles=NEEDLES,
                 max_new_tokens: int | None = None, bin_tokenizer: str = "auto", limit=None,
                 log_prompts: bool = False):
        self.tokenizer = tokenizer = require_tokenizer(backend, "MRCR")
        self.data, self.needles, self.max_new_tokens, self.limit = data, needles, max_new_tokens, limit
        self.log_prompts, self.window = log_prompts, backend.config.context_limit
        self.counter = BinCounter(tokenizer, bin_tokenizer)
        self.every = load_rows(data, tuple(needles))
        self.rows = rows = select(self.every, needles, limit)
        self.prompts = [chat_prompt_ids(tokenizer, list(row.messages)) for row in rows]
        self.budgets = [output_budget(row, tokenizer, max_new_tokens) for row in rows]
        self.bin_tokens = [self.counter.count(list(row.messages), row.answer) for row in rows]
        self.fits = [len(ids) + budget <= self.window for ids, budget in zip(self.prompts, self.budgets)]

    def groups(self) -> list[Group]:
        return [Group("mrcr", [Sample(sample_key(self.rows[i]), i) for i in range(len(self.rows)) if self.fits[i]],
                      limit=False)]

    def base(self, i: int) -> dict:
        row = self.rows[i]
        return {"key": sample_key(row), "n_needles": row.n_needles, "index": row.index,
                "bin": bin_of(self.bin_tokens[i]), "bin_tokens": self.bin_tokens[i], "answer": row.answer,
                "random_string_to_prepend": row.random_string_to_prepend,
                **{k: v for k, v in row.fields.items() if k not in ("prompt", "answer", "random_string_to_prepend")},
                **prompt_fields(prompt_text(self.tokenizer, self.prompts[i]), len(self.prompts[i])),
                "max_new_tokens": self.budgets[i]}

    def request(self, sample: Sample) -> Generate:
        return Generate(self.prompts[sample.item], GenerationOptions(self.budgets[sample.item]))

    def score(self, sample: Sample, output: Generated) -> dict:
        row = self.rows[sample.item]
        return {**self.base(sample.item), "response": output.text,
                "score": grade(output.text, row.answer, row.random_string_to_prepend), "skipped": False,
                "failed": False, "finish_reason": getattr(output.generation, "finish_reason", None)}

    def summarize(self, done: list[Done]) -> tuple[dict, str]:
        generated = iter(done[0].records)
        samples = [next(generated) if self.fits[i] else {**self.base(i), "response": None, "score": None,
                                                         "skipped": True, "failed": False, "finish_reason": None}
                   for i in range(len(self.rows))]
        result = {"summary": summarize(samples), "samples": samples,
                  "prompting": {"data": str(self.data), "stand_in_sample": Path(self.data) == SHIPPED_SAMPLE,
                                "needles": list(self.needles), "limit": self.limit, "window": self.window,
                                "max_new_tokens": self.max_new_tokens if self.max_new_tokens is not None
                                else f"answer tokens + {ANSWER_SLACK}", "chat_format": "model",
                                "bin_tokenizer": self.counter.name, "decoding": "greedy"},
                  "records_before_limit": len(self.every)}
        result["sample_log"] = samples
        if self.log_prompts:
            result["sample_log"] = [{**row, "prompt": prompt_text(self.tokenizer, ids)}
                                    for row, ids in zip(samples, self.prompts)]
        result["deviations"] = deviations(result["prompting"], self.counter)
        return result, format_table(result["summary"], result["prompting"]["bin_tokenizer"])


def run_mrcr(backend, data: str | Path = SHIPPED_SAMPLE, *, needles=NEEDLES, max_new_tokens: int | None = None,
             bin_tokenizer: str = "auto", limit=None, batch_size: int = 8, journal=None,
             log_prompts: bool = False) -> dict:
    task = MrcrTask(backend, data, needles=needles, max_new_tokens=max_new_tokens, bin_tokenizer=bin_tokenizer,
                    limit=limit, log_prompts=log_prompts)
    return run_standalone(task, "mrcr", backend,
                          journal=journal, limit=limit, batch_size=batch_size, log_prompts=log_prompts)


def deviations(prompting: dict, counter: BinCounter) -> list[str]:
    found = []
    if prompting["stand_in_sample"]:
        found.append("data: jaxeval's embedded stand-in sample (synthetic rows in the official format), not openai/mrcr")
    if not counter.official:
        found.append("bins counted with the evaluated model's tokenizer, not tiktoken o200k_base (not available)")
    return found
