"""Scoring the facts config: one teacher-forced read per item, every answer token at once.

A query is recalled when every token of its answer (" 48213." : the number and the final
".") is the model's top-1 prediction; its log-probability is the sum over those tokens.
Unaligned queries (the answer does not start at a token of the model's tokenizer) are
skipped and counted, never scored as wrong.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence


from jaxeval.benchmarks.agent_bench.align import (
    TEXT_MODE, Alignment, align_stored_ids, align_text, stored_ids_problem,
)
from jaxeval.benchmarks.agent_bench.data import FactsItem
from jaxeval.benchmarks.agent_bench.distance import by_distance
from jaxeval.errors import ConfigError, InputTooLongError
from jaxeval.run.lm_eval_view import stderr


@dataclasses.dataclass(frozen=True)
class QueryOutcome:
    item_id: str
    target_index: int  # index into the item's targets
    aligned: bool
    recalled: bool = False
    answer_tokens: int = 0
    correct_tokens: int = 0
    logprob: float = 0.0  # sum over the answer's tokens
    distance_tokens: int = 0


@dataclasses.dataclass(frozen=True)
class ItemOutcome:
    item_id: str
    mode: str  # TEXT_MODE or STORED_IDS_MODE: what this item was read with
    mode_note: str | None  # why auto fell back to text, if it did
    tokens_read: int
    queries: tuple[QueryOutcome, ...]


def align_item(tokenizer, item: FactsItem, mode: str) -> tuple[Alignment, str | None]:
    """The item's token ids and answer positions, and (auto only) why stored ids were not used."""
    spans = [target.answer_char for target in item.targets]
    if mode == TEXT_MODE:
        return align_text(tokenizer, item.text, spans), None
    if mode != "auto":
        raise ConfigError(f"unknown mode '{mode}'; available: auto, text")
    problem = stored_ids_problem(tokenizer, item.text, item.stored_ids)
    if problem is None:
        return align_stored_ids(tokenizer, item.text, item.stored_ids, spans), None
    return align_text(tokenizer, item.text, spans), f"{problem}: tokenized the text (text mode)"


def check_length(backend, n_tokens: int, config: str, split: str, item_id: str) -> None:
    max_length = backend.max_length  # None: no bound (jaxeval.engine.backend.LanguageModel)
    if max_length is not None and n_tokens > max_length:
        raise InputTooLongError(
            f"longctx-agent-bench {config}/{split}, item '{item_id}': {n_tokens} tokens, longer "
            f"than the model's maximum of {max_length} tokens")


def facts_outcome(item: FactsItem, alignment: Alignment, note: str | None, reads) -> ItemOutcome:
    outcomes = []
    for index, (target, span) in enumerate(zip(item.targets, reads)):
        if span is None:
            outcomes.append(QueryOutcome(item.id, index, aligned=False, distance_tokens=target.distance_tokens))
            continue
        outcomes.append(QueryOutcome(
            item_id=item.id, target_index=index, aligned=True, recalled=span.correct, answer_tokens=span.tokens,
            correct_tokens=span.correct_tokens, logprob=span.logprob, distance_tokens=target.distance_tokens))
    return ItemOutcome(item_id=item.id, mode=alignment.mode, mode_note=note,
                       tokens_read=len(alignment.ids) if any(r is not None for r in reads) else 0,
                       queries=tuple(outcomes))


def facts_metrics(items: Sequence[ItemOutcome]) -> dict:
    """Every facts metric of one split, with its counts. Rates are null when nothing was scored."""
    queries = [q for item in items for q in item.queries]
    scored = [q for q in queries if q.aligned]
    answer_tokens = sum(q.answer_tokens for q in scored)
    correct_tokens = sum(q.correct_tokens for q in scored)
    recalled = sum(q.recalled for q in scored)
    return {
        "query_accuracy": recalled / len(scored) if scored else None,
        "query_accuracy_stderr": stderr([float(q.recalled) for q in scored]),  # binomial, over the queries
        "token_accuracy": correct_tokens / answer_tokens if answer_tokens else None,
        "mean_logprob": sum(q.logprob for q in scored) / len(scored) if scored else None,
        "mean_logprob_stderr": stderr([q.logprob for q in scored]),
        "items": len(items),
        "queries": len(queries),
        "scored": len(scored),
        "unaligned": len(queries) - len(scored),
        "recalled": recalled,
        "answer_tokens": answer_tokens,
        "correct_tokens": correct_tokens,
        "tokens_read": sum(item.tokens_read for item in items),
        "mode": _split_mode(items),
        "by_distance": by_distance(queries, lambda q: q.distance_tokens, lambda q: q.aligned,
                                   lambda q: q.recalled, "query_accuracy"),
    }


def _split_mode(items: Sequence[ItemOutcome]) -> str | None:
    modes = {item.mode for item in items}
    return modes.pop() if len(modes) == 1 else ("mixed" if modes else None)
