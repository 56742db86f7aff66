"""Scoring the tool_calls config: one teacher-forced read per item, every target token at once.

A target (a tool's name, a parameter name, the token that closes them, what comes next, a
documented command) is correct when every token it covers is the model's top-1 prediction;
its log-probability is the sum over those tokens. The headline is far accuracy; fresh targets
are far targets with no earlier call of their tool in the 512 tokens before them; near targets
are the ones that are not far. Unaligned targets are skipped and counted, never scored wrong.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence


from jaxeval.benchmarks.agent_bench.align import TEXT_MODE, align_stored_ids, align_text, stored_ids_problem
from jaxeval.benchmarks.agent_bench.data import ToolCallsItem
from jaxeval.benchmarks.agent_bench.distance import by_distance
from jaxeval.benchmarks.agent_bench.schema import TOOL_KINDS
from jaxeval.errors import ConfigError
from jaxeval.run.lm_eval_view import stderr


@dataclasses.dataclass(frozen=True)
class ToolTargetOutcome:
    kind: str
    far: bool
    fresh: bool
    aligned: bool
    correct: bool = False
    logprob: float = 0.0  # summed over the target's tokens
    tokens: int = 0
    distance_tokens: int = 0


@dataclasses.dataclass(frozen=True)
class ToolItemOutcome:
    item_id: str
    mode: str
    mode_note: str | None
    tokens_read: int
    targets: tuple[ToolTargetOutcome, ...]


def align_spans(tokenizer, text: str, stored_ids, spans, mode: str):
    """(alignment, note): text mode, or (auto) the stored ids when they fit, else text mode."""
    if mode == TEXT_MODE:
        return align_text(tokenizer, text, spans), None
    if mode != "auto":
        raise ConfigError(f"unknown mode '{mode}'; available: auto, text")
    problem = stored_ids_problem(tokenizer, text, stored_ids)
    if problem is None:
        return align_stored_ids(tokenizer, text, stored_ids, spans), None
    return align_text(tokenizer, text, spans), f"{problem}: tokenized the text (text mode)"


def tool_calls_outcome(item: ToolCallsItem, alignment, note: str | None, read) -> ToolItemOutcome:
    outcomes = []
    for target, span in zip(item.targets, read):
        base = dict(kind=target.kind, far=target.far, fresh=target.fresh, distance_tokens=target.distance_tokens)
        if span is None:
            outcomes.append(ToolTargetOutcome(**base, aligned=False))
        else:
            outcomes.append(ToolTargetOutcome(**base, aligned=True, correct=span.correct, logprob=span.logprob,
                                              tokens=span.tokens))
    any_read = any(span is not None for span in read)
    return ToolItemOutcome(item_id=item.id, mode=alignment.mode, mode_note=note,
                           tokens_read=len(alignment.ids) if any_read else 0, targets=tuple(outcomes))


def _group_metrics(targets: Sequence[ToolTargetOutcome]) -> dict:
    """Accuracy and mean log-prob of far, fresh and near targets, with their counts."""
    metrics = {}
    groups = {"far": [t for t in targets if t.far], "fresh": [t for t in targets if t.fresh],
              "near": [t for t in targets if not t.far]}
    for name, group in groups.items():
        scored = [t for t in group if t.aligned]
        metrics[f"{name}_accuracy"] = sum(t.correct for t in scored) / len(scored) if scored else None
        metrics[f"{name}_accuracy_stderr"] = stderr([float(t.correct) for t in scored])
        metrics[f"{name}_mean_logprob"] = sum(t.logprob for t in scored) / len(scored) if scored else None
        metrics[f"{name}_mean_logprob_stderr"] = stderr([t.logprob for t in scored])
        metrics[f"{name}_targets"] = len(group)
        metrics[f"{name}_scored"] = len(scored)
    return metrics


def tool_calls_metrics(items: Sequence[ToolItemOutcome]) -> dict:
    """Every tool_calls metric of one split; rates are null when nothing was scored."""
    from jaxeval.benchmarks.agent_bench.facts import _split_mode

    targets = [t for item in items for t in item.targets]
    scored = [t for t in targets if t.aligned]
    return {
        **_group_metrics(targets),
        "by_kind": {kind: {**_group_metrics([t for t in targets if t.kind == kind]),
                           "targets": sum(t.kind == kind for t in targets)} for kind in TOOL_KINDS},
        "items": len(items),
        "targets": len(targets),
        "scored": len(scored),
        "unaligned": len(targets) - len(scored),
        "tokens_read": sum(item.tokens_read for item in items),
        "mode": _split_mode(items),
        "by_distance": by_distance(targets, lambda t: t.distance_tokens, lambda t: t.aligned,
                                   lambda t: t.correct, "accuracy"),
    }
