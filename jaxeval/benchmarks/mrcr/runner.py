"""run_mrcr: the conversation through the model's chat template, greedy generation, the card's grade.

Each row's whole conversation (every message, the last user turn asking for the k-th needle)
goes through the tokenizer's chat template with the assistant turn opened. An item fits when its
prompt plus the output budget fits the model's window; one that does not is skipped, counted per
needle count and bin, and listed in the samples: never dropped silently. Generated samples are
journaled under "mrcr/<n>needle/<row index>/0".
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.base import limited, prompt_fields, prompt_text
from jaxeval.benchmarks.mrcr.data import NEEDLES, SHIPPED_SAMPLE, MrcrRow, load_rows
from jaxeval.benchmarks.mrcr.grading import BinCounter, bin_of, grade
from jaxeval.benchmarks.mrcr.summary import summarize
from jaxeval.generation import GenerationOptions, chat_prompt_ids, decoded, encode, generate, require_tokenizer

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


def run_mrcr(backend, data: str | Path = SHIPPED_SAMPLE, *, needles=NEEDLES, max_new_tokens: int | None = None,
             bin_tokenizer: str = "auto", limit=None, batch_size: int = 8, journal=None,
             log_prompts: bool = False) -> dict:
    from jaxeval.run.resumable import map_journaled

    tokenizer = require_tokenizer(backend, "MRCR")
    window = backend.config.context_limit
    counter = BinCounter(tokenizer, bin_tokenizer)
    every = load_rows(data, tuple(needles))
    rows = select(every, needles, limit)
    prompts = [chat_prompt_ids(tokenizer, list(row.messages)) for row in rows]
    budgets = [output_budget(row, tokenizer, max_new_tokens) for row in rows]
    bin_tokens = [counter.count(list(row.messages), row.answer) for row in rows]
    fits = [len(ids) + budget <= window for ids, budget in zip(prompts, budgets)]
    todo = [i for i in range(len(rows)) if fits[i]]
    keys = [sample_key(rows[i]) for i in todo]

    def base(i: int) -> dict:
        row = rows[i]
        return {"key": sample_key(row), "n_needles": row.n_needles, "index": row.index,
                "bin": bin_of(bin_tokens[i]), "bin_tokens": bin_tokens[i], "answer": row.answer,
                "random_string_to_prepend": row.random_string_to_prepend,
                **{k: v for k, v in row.fields.items() if k not in ("prompt", "answer", "random_string_to_prepend")},
                **prompt_fields(prompt_text(tokenizer, prompts[i]), len(prompts[i])), "max_new_tokens": budgets[i]}

    def compute(batch: list[int]) -> list[dict]:
        chosen = [todo[j] for j in batch]
        groups: dict[int, list[int]] = {}
        for i in chosen:  # the budget differs per item: one generate call per budget
            groups.setdefault(budgets[i], []).append(i)
        done: dict[int, dict] = {}
        for budget, members in groups.items():
            generations = generate(backend, [prompts[i] for i in members], GenerationOptions(budget),
                                   batch_size=batch_size)
            for i, generation in zip(members, generations):
                response = decoded(tokenizer, generation)
                done[i] = {**base(i), "response": response,
                           "score": grade(response, rows[i].answer, rows[i].random_string_to_prepend),
                           "skipped": False, "failed": False,
                           "finish_reason": getattr(generation, "finish_reason", None)}
        return [done[i] for i in chosen]

    generated = iter(map_journaled(journal, keys, compute, batch_size=batch_size, desc="mrcr", unit="item"))
    samples = [next(generated) if fits[i] else {**base(i), "response": None, "score": None, "skipped": True,
                                                "failed": False, "finish_reason": None}
               for i in range(len(rows))]
    result = {"summary": summarize(samples), "samples": samples,
              "prompting": {"data": str(data), "stand_in_sample": Path(data) == SHIPPED_SAMPLE,
                            "needles": list(needles), "limit": limit, "window": window,
                            "max_new_tokens": max_new_tokens if max_new_tokens is not None
                            else f"answer tokens + {ANSWER_SLACK}", "chat_format": "model",
                            "bin_tokenizer": counter.name, "decoding": "greedy"},
              "records_before_limit": len(every)}
    result["sample_log"] = samples
    if log_prompts:
        result["sample_log"] = [{**row, "prompt": prompt_text(tokenizer, ids)} for row, ids in zip(samples, prompts)]
    result["deviations"] = deviations(result["prompting"], counter)
    return result


def deviations(prompting: dict, counter: BinCounter) -> list[str]:
    found = []
    if prompting["stand_in_sample"]:
        found.append("data: jaxeval's embedded stand-in sample (synthetic rows in the official format), not openai/mrcr")
    if not counter.official:
        found.append("bins counted with the evaluated model's tokenizer, not tiktoken o200k_base (not available)")
    return found
