"""The judge interface shared by HELMET, AgenticLU and any other model-graded metric.

A judge takes a batch of prompts (each one user turn of a chat) and returns one JudgeReply per
prompt, in order. A failed call is never a silent 0: its reply has text=None and error set, and
the judge counts it by kind so that results can report how many judgements are missing and why.
"""

from __future__ import annotations

import copy
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable


@dataclass(frozen=True)
class JudgeReply:
    text: str | None  # None when the call failed
    error: str | None  # why it failed (timeout, HTTP 500, unparseable ...)

    @property
    def ok(self) -> bool:
        return self.text is not None


@runtime_checkable
class Judge(Protocol):
    def complete(self, prompts: Sequence[str]) -> list[JudgeReply]:  # each prompt = one user turn
        ...

    def settings(self) -> dict:  # recorded in results; never API keys
        ...


class FailureCounter:
    """Thread-safe tally of calls, failed calls by kind and retried attempts (for results files)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.calls = 0
        self.failures: Counter[str] = Counter()  # kind -> prompts whose final reply failed
        self.retries: Counter[str] = Counter()  # kind -> failed attempts that were retried

    def record_call(self) -> None:
        with self._lock:
            self.calls += 1

    def record_failure(self, kind: str) -> None:
        with self._lock:
            self.failures[kind] += 1

    def record_retry(self, kind: str) -> None:
        with self._lock:
            self.retries[kind] += 1

    def summary(self) -> dict:
        with self._lock:
            return {"calls": self.calls, "failed": sum(self.failures.values()),
                    "failures_by_kind": dict(sorted(self.failures.items())),
                    "retries": sum(self.retries.values()), "retries_by_kind": dict(sorted(self.retries.items()))}


def with_reply_limit(judge: Judge, max_tokens: int) -> Judge:
    """The judge with replies capped at max_tokens (a benchmark's own limit for one kind of
    judgement, e.g. HELMET's LongQA judge at 2,048); it shares the original's failure counter and
    usage, so results still report one summary. Judges without a max_tokens setting are returned as is."""
    current = getattr(judge, "max_tokens", None)
    if not isinstance(current, int) or current <= max_tokens:
        return judge
    limited = copy.copy(judge)
    limited.max_tokens = max_tokens
    return limited


def judge_record(judge: Judge) -> dict:
    """What a results file stores about a judge: its settings and, where it keeps one, its summary
    of calls and failures by kind."""
    record = {"settings": judge.settings()}
    summary = getattr(judge, "summary", None)
    if callable(summary):
        record["summary"] = summary()
    return record
