"""The rules configs: where each target is read, and the follow / retained metrics.

A target's score is log p(first token of expected_text) read from the prefix text[:char]:
the first token is found by tokenizing prefix + expected_text and taking the first token that
starts at or after char; it must start exactly at char (a token boundary), otherwise the
target is unaligned. The context is the tokens before it. When the tokenization of the whole
text starts with that context (the usual case), the target is read from the whole text's
read; otherwise from its own sequence (context + token). Either way every distinct token
sequence is read once, however many items and configs carry it.

effect = score(with rule) - score(without rule). The reference decides which targets count:
|effect_ref| >= 1 nat. follow = share of counted targets with effect / effect_ref >= 0.5;
retained = sum(effect) / sum(effect_ref). A cell without counted targets is null.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from jaxeval.benchmarks.agent_bench.data import RulesItem
from jaxeval.benchmarks.agent_bench.schema import RULE_FAMILIES, RULE_PLACEMENTS
from jaxeval.run.lm_eval_view import stderr

COUNTED_EFFECT = 1.0  # nats: a target counts when the reference's |effect| reaches this
FOLLOW_RATIO = 0.5


@dataclasses.dataclass(frozen=True)
class TargetRead:
    ids: tuple[int, ...]  # the sequence to read (a whole text, or context + token)
    position: int  # ids[position] is the first token of expected_text
    token: int


class TextTokens:
    """Tokenizations of whole texts, each computed once (texts are keyed by content)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._ids: dict[str, tuple[int, ...]] = {}

    def ids(self, text: str) -> tuple[int, ...]:
        if text not in self._ids:
            self._ids[text] = tuple(self.tokenizer(text)["input_ids"])
        return self._ids[text]


def target_read(texts: TextTokens, text: str, char: int, expected_text: str) -> TargetRead | None:
    """Where log p(first token of expected_text) after text[:char] is read; None if unaligned."""
    encoding = texts.tokenizer(text[:char] + expected_text, return_offsets_mapping=True)
    ids = encoding["input_ids"]
    position = next((index for index, (start, end) in enumerate(encoding["offset_mapping"])
                     if end > start and start >= char), None)
    if position is None or position == 0 or encoding["offset_mapping"][position][0] != char:
        return None
    whole = texts.ids(text)
    context = tuple(ids[:position])
    if len(whole) > position and whole[:position] == context:
        return TargetRead(ids=whole, position=position, token=int(ids[position]))
    return TargetRead(ids=context + (int(ids[position]),), position=position, token=int(ids[position]))


def item_reads(texts: TextTokens, item: RulesItem) -> list[tuple[TargetRead, TargetRead] | None]:
    """Per target: its (without rule, with rule) reads, or None when either side is unaligned."""
    reads = []
    for target in item.targets:
        without = target_read(texts, item.text_without_rule, target.char_without_rule, target.expected_text)
        with_rule = target_read(texts, item.text_with_rule, target.char_with_rule, target.expected_text)
        reads.append(None if without is None or with_rule is None else (without, with_rule))
    return reads


def _cell(targets: Sequence[dict], placement: str, family: str) -> dict:
    """targets: {"scores": (without, with) or None, "reference": (without, with) or None}."""
    aligned = [t for t in targets if t["scores"] is not None and t["reference"] is not None]
    effects = [(t["scores"][1] - t["scores"][0], t["reference"][1] - t["reference"][0]) for t in aligned]
    counted = [(eff, ref) for eff, ref in effects if abs(ref) >= COUNTED_EFFECT]
    n = len(counted)
    return {
        "placement": placement, "family": family,
        "follow": sum(eff / ref >= FOLLOW_RATIO for eff, ref in counted) / n if n else None,
        "follow_stderr": stderr([float(eff / ref >= FOLLOW_RATIO) for eff, ref in counted]),  # binomial
        "retained": sum(eff for eff, _ in counted) / sum(ref for _, ref in counted) if n else None,  # a ratio: no stderr
        "eff": sum(eff for eff, _ in counted) / n if n else None,
        "eff_stderr": stderr([eff for eff, _ in counted]),
        "eff_ref": sum(ref for _, ref in counted) / n if n else None,
        "counted": n,
        "targets": len(targets),
        "unaligned": len(targets) - len(aligned),
    }


def rules_metrics(items: Sequence[RulesItem], scores: dict, reference: dict, config: str, split: str) -> dict:
    """Cells per placement x family, their "all" aggregates, and the split's counts.

    scores / reference: (config, split, item id, target index) -> (without, with) or None.
    """
    by_cell: dict[tuple[str, str], list[dict]] = {}
    for item in items:
        for index in range(len(item.targets)):
            key = (config, split, item.id, index)
            target = {"scores": scores[key], "reference": reference[key]}
            for placement in (item.placement, "all"):
                for family in (item.family, "all"):
                    by_cell.setdefault((placement, family), []).append(target)
    cells = {f"{placement}/{family}": _cell(by_cell.get((placement, family), []), placement, family)
             for placement in (*RULE_PLACEMENTS, "all") for family in (*RULE_FAMILIES, "all")}
    overall = cells["all/all"]
    return {
        "follow": overall["follow"], "follow_stderr": overall["follow_stderr"], "retained": overall["retained"],
        "eff": overall["eff"], "eff_stderr": overall["eff_stderr"], "eff_ref": overall["eff_ref"],
        "cells": cells,
        "items": len(items),
        "contexts": len({item.context_id for item in items}),
        "targets": overall["targets"],
        "scored": overall["targets"] - overall["unaligned"],
        "counted": overall["counted"],
        "unaligned": overall["unaligned"],
    }


def read_targets(backend, sequences: dict[tuple[int, ...], set[tuple[int, int]]],
                 batch_size: int = 1) -> tuple[dict, int]:
    """Read every distinct sequence once with all its (position, token) pairs.

    backend.read_many (jaxeval.engine.backend.LanguageModel) runs shared prefixes once where the
    backend shares them; the sequences sharing none are read batch_size per step. Returns
    {(ids, position, token): log p} and the tokens run through the model.
    """
    requests = []
    for ids, pairs in sequences.items():
        ordered = sorted(pairs)
        requests.append((np.asarray(ids, np.int32), np.asarray([p for p, _ in ordered], np.int32),
                         np.asarray([t for _, t in ordered], np.int32), ids, ordered))
    shared = backend.read_many([(ids, positions, tokens) for ids, positions, tokens, _, _ in requests],
                               batch_size=batch_size)
    results, tokens_run = shared.results, shared.tokens_run
    logprobs = {}
    for (_, positions, _, key, ordered), result in zip(requests, results):
        values = np.asarray(result.logprobs, dtype=np.float64).reshape(-1)
        if values.shape != positions.shape:
            raise ValueError(f"backend returned {values.shape} log-probs for {positions.shape[0]} read positions")
        for (position, token), value in zip(ordered, values):
            logprobs[(key, position, token)] = float(value)
    return logprobs, tokens_run


def cell_metrics(targets: Sequence[dict], placement: str, family: str) -> dict:
    """One cell's follow / retained / counts (targets as _cell takes them), for paired reports."""
    return _cell(targets, placement, family)
