"""LongBenchV2Task and run_longbench_v2: pred.py's protocol on a jaxeval model, and the log-likelihood variant.

Generation ("0shot", or "cot": a 1,024-token chain of thought, then pred.py's second call with the
cot_ans template and the stripped thought): each prompt cut in the middle to max_len tokens as
query_llm cuts it, sent as one user turn (the model's chat template, as pred.py's chat-completions
call), sampled at temperature 0.1 (pred.py's) from the run's seed. The response is stripped and
its answer extracted; judge = pred == answer. Where the chat-formatted prompt and the output budget
still overflow the model's window, the prompt is cut again by the same rule (counted per item).

An empty output is a row pred.py would not write (it drops the item): here it is kept, scored
wrong (pred None) and counted as `empty_responses`, so no item silently leaves the denominator.

loglik (task longbench_v2_loglik, not the official score): the 0shot prompt, then the assistant
text "The correct answer is (", and the log-probabilities of the four letters at the next
position from one teacher-forced read; pred is the most likely letter.

Journal keys: "longbench_v2/<variant>/<_id>/0".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxeval.benchmarks.base import prompt_fields, prompt_text, run_standalone
from jaxeval.benchmarks.longbench_v2.data import SHIPPED_SAMPLE, load_items
from jaxeval.benchmarks.loop import Done, Generate, Group, Read, Sample, Task, Then
from jaxeval.benchmarks.longbench_v2.prompts import (
    LETTERS, LOGLIK_ANSWER_PREFIX, MAX_NEW_TOKENS, OFFICIAL_MAX_LEN, TEMPLATES, extract_answer, fill, truncate,
)
from jaxeval.benchmarks.longbench_v2.scoring import format_table, result_table
from jaxeval.errors import ConfigError, InputTooLongError
from jaxeval.generation import (
    GenerationOptions, chat_prompt_ids, encode, require_tokenizer, resolve_chat_format, user_turn,
)

CONTEXT_KEPT = 1000  # pred.py writes context[:1000] into its rows


def default_max_len(window: int) -> int:
    """pred.py's 120,000 where the window holds it with the longest output (1,024) and template
    room; otherwise what the window leaves (a recorded deviation)."""
    return min(OFFICIAL_MAX_LEN, window - MAX_NEW_TOKENS["0shot_cot"] - 64)


class Prompter:
    def __init__(self, tokenizer, chat_format: str, window: int, max_len: int):
        self.tokenizer, self.window, self.max_len = tokenizer, window, max_len
        self.chat_format = resolve_chat_format(chat_format, tokenizer)

    def ids(self, text: str) -> list[int]:
        if self.chat_format == "model":
            return chat_prompt_ids(self.tokenizer, user_turn(text))
        return encode(self.tokenizer, text, add_special_tokens=True)

    def build(self, prompt: str, budget: int) -> dict:
        """The cut prompt's ids and what happened to it; `budget` tokens must fit after it."""
        text, raw_tokens, truncated = truncate(prompt, self.tokenizer, self.max_len)
        ids = self.ids(text)
        refit = 0
        while len(ids) + budget > self.window:  # the chat markup or a decode seam overflowed the window
            room = self.max_len - (len(ids) + budget - self.window) - refit
            if room < 2:
                raise InputTooLongError(f"LongBench v2: a window of {self.window} tokens leaves no room for the "
                                        f"prompt after {budget} output tokens")
            text, _, _ = truncate(prompt, self.tokenizer, room)
            ids, refit = self.ids(text), refit + 1
        return {"ids": ids, "raw_tokens": raw_tokens, "truncated": truncated, "window_truncated": refit > 0}


def _row(item: dict, key: str) -> dict:
    return {"key": key, **{k: v for k, v in item.items() if k != "context"}, "context": item["context"][:CONTEXT_KEPT]}


LABELS = {"0shot": "LongBench v2", "cot": "LongBench v2 (CoT)",
          "loglik": "LongBench v2 log-likelihood (not the official score)"}


class LongBenchV2Task(Task):
    """LongBench v2 on the sample loop: one group of items; 0shot one generation each, cot a
    second (Then) from the stripped thought, loglik one read of the four letters."""

    def __init__(self, backend, data: str | Path = SHIPPED_SAMPLE, *, variant: str = "0shot",
                 max_len: int | None = None, chat_format: str = "auto", temperature: float = 0.1, seed: int = 0,
                 limit=None, log_prompts: bool = False):
        if variant not in ("0shot", "cot", "loglik"):
            raise ConfigError(f"unknown LongBench v2 variant {variant!r}: 0shot, cot or loglik")
        self.tokenizer = tokenizer = require_tokenizer(backend, "LongBench v2")
        self.window = window = backend.config.context_limit
        self.deviations = []
        if max_len is None:
            max_len = default_max_len(window)
            if max_len != OFFICIAL_MAX_LEN:
                self.deviations.append(f"max_len {max_len} (the window {window} minus 1,088), not pred.py's 120000")
        if max_len < 2:
            raise ConfigError(f"LongBench v2 max_len must be at least 2 tokens, got {max_len}")
        self.prompter = Prompter(tokenizer, chat_format, window, max_len)
        self.data, self.variant, self.max_len, self.temperature, self.seed = data, variant, max_len, temperature, seed
        self.limit, self.log_prompts = limit, log_prompts
        self.every = load_items(data)
        self.texts: dict[str, str] = {}  # by key: the prompt text of the items computed in this run (cot: the last)
        self.built: dict[str, dict] = {}  # by key: the prompt last built for it

    def groups(self) -> list[Group]:
        return [Group(f"longbench_v2 {self.variant}",
                      [Sample(f"longbench_v2/{self.variant}/{item['_id']}/0", item) for item in self.every])]

    def _generate(self, sample: Sample, prompt: str, step: str, seed_offset: int) -> Generate:
        built = self.built[sample.key] = self.prompter.build(prompt, MAX_NEW_TOKENS[step])
        self.texts[sample.key] = prompt_text(self.tokenizer, built["ids"])
        return Generate(built["ids"], GenerationOptions(MAX_NEW_TOKENS[step], temperature=self.temperature,
                                                        seed=self.seed + seed_offset))

    def request(self, sample: Sample) -> Generate | Read:
        if self.variant == "loglik":
            return self._loglik_read(sample)
        first = "0shot_cot" if self.variant == "cot" else "0shot"
        return self._generate(sample, fill(TEMPLATES[first], sample.item), first, 0)

    def score(self, sample: Sample, output) -> dict | Then:
        row = _row(sample.item, sample.key)
        if self.variant == "loglik":
            return {**row, **self._loglik_score(sample, output)}
        response = output.text.strip()
        if self.variant == "cot":
            row["response_cot"] = response
            second = self._generate(sample, fill(TEMPLATES["0shot_cot_ans"], sample.item, response), "0shot_cot_ans", 1)
            return Then(second, lambda answer: self._answered(sample, row, answer.text.strip()))
        return self._answered(sample, row, response)

    def _answered(self, sample: Sample, row: dict, response: str) -> dict:
        built, pred = self.built[sample.key], extract_answer(response)
        row.update(response=response, pred=pred, judge=pred == row["answer"], empty_response=response == "",
                   truncated=built["truncated"], window_truncated=built["window_truncated"],
                   **prompt_fields(self.texts[sample.key], len(built["ids"])))
        return row

    def _loglik_read(self, sample: Sample) -> Read:
        tokenizer = self.tokenizer
        built = self.prompter.build(fill(TEMPLATES["0shot"], sample.item),
                                    len(encode(tokenizer, LOGLIK_ANSWER_PREFIX, False)) + 1)
        context = built["ids"] + encode(tokenizer, LOGLIK_ANSWER_PREFIX, add_special_tokens=False)
        self.built[sample.key] = {**built, "context": context}
        self.texts[sample.key] = prompt_text(tokenizer, context)
        letters = letter_ids(tokenizer)
        return Read(np.asarray(context + letters[:1]), np.asarray([len(context)]), np.asarray([letters]))

    def _loglik_score(self, sample: Sample, result) -> dict:
        built = self.built[sample.key]
        logprobs = [float(x) for x in np.asarray(result.logprobs).reshape(-1)]
        pred = LETTERS[int(np.argmax(logprobs))]
        return {"logprobs": dict(zip(LETTERS, logprobs)), "pred": pred, "judge": pred == sample.item["answer"],
                "truncated": built["truncated"], "window_truncated": built["window_truncated"],
                **prompt_fields(self.texts[sample.key], len(built["context"]))}

    def summarize(self, done: list[Done]) -> tuple[dict, str]:
        rows, deviations = done[0].records, list(self.deviations)
        table = result_table(rows)
        empty = sum(1 for row in rows if row.get("empty_response"))
        if empty:
            deviations.append(f"{empty} empty responses kept and scored wrong (pred.py drops such items from its file)")
        if self.variant == "loglik":
            deviations.append("log-likelihood over A-D: a diagnostic, not LongBench v2's official generate-and-match "
                              "score")
        # prompt texts (of the items computed in this run; the last call's for cot) go to the samples file only
        sample_log = [{**row, "prompt": self.texts[row["key"]]} if self.log_prompts and row["key"] in self.texts
                      else row for row in rows]
        result = {"table": table, "samples": rows, "sample_log": sample_log, "deviations": deviations,
                  "records_before_limit": len(self.every),
                  "prompting": {"data": str(self.data), "stand_in_sample": Path(self.data) == SHIPPED_SAMPLE,
                                "variant": self.variant, "max_len": self.max_len, "window": self.window,
                                "chat_format": self.prompter.chat_format,
                                "temperature": None if self.variant == "loglik" else self.temperature,
                                "seed": self.seed, "limit": self.limit,
                                "truncated": sum(1 for r in rows if r.get("truncated")),
                                "window_truncated": sum(1 for r in rows if r.get("window_truncated")),
                                "empty_responses": empty}}
        return result, format_table(table, LABELS[self.variant])


def run_longbench_v2(backend, data: str | Path = SHIPPED_SAMPLE, *, variant: str = "0shot", max_len: int | None = None,
                     chat_format: str = "auto", temperature: float = 0.1, seed: int = 0, limit=None,
                     batch_size: int = 8, journal=None, log_prompts: bool = False) -> dict:
    task = LongBenchV2Task(backend, data, variant=variant, max_len=max_len, chat_format=chat_format,
                           temperature=temperature, seed=seed, limit=limit, log_prompts=log_prompts)
    return run_standalone(task, "longbench_v2", backend,
                          journal=journal, limit=limit, batch_size=batch_size, log_prompts=log_prompts)


def letter_ids(tokenizer) -> list[int]:
    """The token of each letter as it follows the answer prefix: encode(prefix + letter) minus
    encode(prefix) (a SentencePiece "A" alone would be "▁A", not the token after "(")."""
    prefix = encode(tokenizer, LOGLIK_ANSWER_PREFIX, add_special_tokens=False)
    found = []
    for letter in LETTERS:
        ids = encode(tokenizer, LOGLIK_ANSWER_PREFIX + letter, add_special_tokens=False)
        if ids[:len(prefix)] != prefix or len(ids) != len(prefix) + 1:
            raise ConfigError(f"longbench_v2_loglik: the tokenizer does not encode {letter!r} after "
                              f"{LOGLIK_ANSWER_PREFIX!r} as one token of its own")
        found.append(ids[-1])
    return found
