"""run_longbench_v2: pred.py's protocol on a jaxeval model, and the log-likelihood variant.

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

from jaxeval.benchmarks.base import limited, prompt_fields, prompt_text
from jaxeval.benchmarks.longbench_v2.data import SHIPPED_SAMPLE, load_items
from jaxeval.benchmarks.longbench_v2.prompts import (
    LETTERS, LOGLIK_ANSWER_PREFIX, MAX_NEW_TOKENS, OFFICIAL_MAX_LEN, TEMPLATES, extract_answer, fill, truncate,
)
from jaxeval.benchmarks.longbench_v2.scoring import result_table
from jaxeval.errors import ConfigError, InputTooLongError
from jaxeval.generation import (
    GenerationOptions, chat_prompt_ids, decoded, encode, generate, require_tokenizer, resolve_chat_format, user_turn,
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


def run_longbench_v2(backend, data: str | Path = SHIPPED_SAMPLE, *, variant: str = "0shot", max_len: int | None = None,
                     chat_format: str = "auto", temperature: float = 0.1, seed: int = 0, limit=None,
                     batch_size: int = 8, journal=None, log_prompts: bool = False) -> dict:
    from jaxeval.run.resumable import map_journaled

    if variant not in ("0shot", "cot", "loglik"):
        raise ConfigError(f"unknown LongBench v2 variant {variant!r}: 0shot, cot or loglik")
    tokenizer = require_tokenizer(backend, "LongBench v2")
    window = backend.config.context_limit
    deviations = []
    if max_len is None:
        max_len = default_max_len(window)
        if max_len != OFFICIAL_MAX_LEN:
            deviations.append(f"max_len {max_len} (the window {window} minus 1,088), not pred.py's 120000")
    if max_len < 2:
        raise ConfigError(f"LongBench v2 max_len must be at least 2 tokens, got {max_len}")
    prompter = Prompter(tokenizer, chat_format, window, max_len)
    every = load_items(data)
    items = limited(every, limit)
    keys = [f"longbench_v2/{variant}/{item['_id']}/0" for item in items]
    texts: dict[int, str] = {}

    def generate_step(indices, prompts, budget, seed_offset):
        built = [prompter.build(p, budget) for p in prompts]
        outputs = generate(backend, [b["ids"] for b in built], GenerationOptions(
            budget, temperature=temperature, seed=seed + seed_offset), batch_size=batch_size)
        for i, b in zip(indices, built):
            texts[i] = prompt_text(tokenizer, b["ids"])
        return built, [decoded(tokenizer, output).strip() for output in outputs]

    def compute(indices: list[int]) -> list[dict]:
        chosen = [items[i] for i in indices]
        rows = [_row(item, keys[i]) for i, item in zip(indices, chosen)]
        if variant == "loglik":
            for i, row, item in zip(indices, rows, chosen):
                texts[i], scored = _loglik(backend, prompter, item)
                row.update(scored)
            return rows
        first = "0shot_cot" if variant == "cot" else "0shot"
        built, outputs = generate_step(indices, [fill(TEMPLATES[first], item) for item in chosen],
                                       MAX_NEW_TOKENS[first], 0)
        if variant == "cot":
            for row, output in zip(rows, outputs):
                row["response_cot"] = output
            built, outputs = generate_step(indices, [fill(TEMPLATES["0shot_cot_ans"], item, cot)
                                                     for item, cot in zip(chosen, outputs)],
                                           MAX_NEW_TOKENS["0shot_cot_ans"], 1)
        for i, row, b, response in zip(indices, rows, built, outputs):
            pred = extract_answer(response)
            row.update(response=response, pred=pred, judge=pred == row["answer"], empty_response=response == "",
                       truncated=b["truncated"], window_truncated=b["window_truncated"],
                       **prompt_fields(texts[i], len(b["ids"])))
        return rows

    rows = map_journaled(journal, keys, compute, batch_size=batch_size, desc=f"longbench_v2 {variant}", unit="item")
    table = result_table(rows)
    empty = sum(1 for row in rows if row.get("empty_response"))
    if empty:
        deviations.append(f"{empty} empty responses kept and scored wrong (pred.py drops such items from its file)")
    if variant == "loglik":
        deviations.append("log-likelihood over A-D: a diagnostic, not LongBench v2's official generate-and-match score")
    # prompt texts (of the items computed in this run; the last call's for cot) go to the samples file only
    sample_log = [{**row, "prompt": texts[i]} if log_prompts and i in texts else row for i, row in enumerate(rows)]
    return {"table": table, "samples": rows, "sample_log": sample_log, "deviations": deviations,
            "records_before_limit": len(every),
            "prompting": {"data": str(data), "stand_in_sample": Path(data) == SHIPPED_SAMPLE, "variant": variant,
                          "max_len": max_len, "window": window, "chat_format": prompter.chat_format,
                          "temperature": None if variant == "loglik" else temperature, "seed": seed, "limit": limit,
                          "truncated": sum(1 for r in rows if r.get("truncated")),
                          "window_truncated": sum(1 for r in rows if r.get("window_truncated")),
                          "empty_responses": empty}}


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


def _loglik(backend, prompter: Prompter, item: dict) -> dict:
    tokenizer = prompter.tokenizer
    built = prompter.build(fill(TEMPLATES["0shot"], item), len(encode(tokenizer, LOGLIK_ANSWER_PREFIX, False)) + 1)
    context = built["ids"] + encode(tokenizer, LOGLIK_ANSWER_PREFIX, add_special_tokens=False)
    letters = letter_ids(tokenizer)
    result = backend.read(np.asarray(context + letters[:1]), np.asarray([len(context)]), np.asarray([letters]))
    logprobs = [float(x) for x in np.asarray(result.logprobs).reshape(-1)]
    pred = LETTERS[int(np.argmax(logprobs))]
    text = prompt_text(tokenizer, context)
    return text, {"logprobs": dict(zip(LETTERS, logprobs)), "pred": pred, "judge": pred == item["answer"],
                  "truncated": built["truncated"], "window_truncated": built["window_truncated"],
                  **prompt_fields(text, len(context))}
