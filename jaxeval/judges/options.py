"""The judge flags shared by `jaxeval run` and `jaxeval score`, and the rule that a run whose
judged metrics are missing is a failed run.

A judgement is missing when its call failed (timeout, connection, HTTP status, garbage) or its
reply could not be parsed; it is never scored 0. A task reports its judgements as
`{"judgements": n, "missing": m, "missing_by_kind": {kind: count}}` under "judged" in its result;
when more than --judge_max_failures of them (a fraction; default 0) are missing, the command
writes what it has and then exits with JUDGE_FAILURE_EXIT, naming the counts.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Iterable

from jaxeval.errors import ConfigError
from jaxeval.options.settings import add_flags, setting

JUDGE_FAILURE_EXIT = 3


@dataclasses.dataclass(frozen=True)
class JudgeOptions:
    """The judge flags of `jaxeval run` and of the score commands that judge (helmet's ScoreOptions)."""
    judge_timeout: float = setting(60.0, "seconds an HTTP judge may take per request (per socket operation)")
    judge_retries: int = setting(3, "extra attempts of a failed HTTP judge request (exponential backoff, Retry-After)")
    judge_max_failures: float = setting(0.0, "fraction of judgements that may be missing (failed or unparseable) "
                                        "before the run exits with status 3 (after writing its results); default 0")


DEFAULTS = {field.name: field.default for field in dataclasses.fields(JudgeOptions)}


def _flag(values, name: str):
    """A judge flag's value, from a run's flags by dest (jaxeval.options.flags.RunFlags.extra) or a score
    command's options; its default where they are not declared (library callers)."""
    if isinstance(values, Mapping):
        return values.get(name, DEFAULTS[name])
    return getattr(values, name, DEFAULTS[name])


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    add_flags(parser, JudgeOptions)


def check_judge_arguments(values) -> None:
    timeout, retries, fraction = (_flag(values, name) for name in DEFAULTS)
    if not timeout > 0:
        raise ConfigError(f"--judge_timeout must be > 0 seconds, got {timeout}")
    if retries < 0:
        raise ConfigError(f"--judge_retries must be >= 0, got {retries}")
    if not 0 <= fraction <= 1:
        raise ConfigError(f"--judge_max_failures is a fraction in [0, 1], got {fraction}")


def http_options(values) -> dict:
    """make_judge options of an HTTP judge from the flags."""
    return {"timeout": _flag(values, "judge_timeout"), "retries": _flag(values, "judge_retries")}


def count_judgements(summaries: Iterable[dict | None]) -> dict:
    """{"judgements", "missing", "missing_by_kind"} over summaries with judged / failed /
    failure_reasons (jaxeval.benchmarks.helmet.judging.summarize_judgements)."""
    judged = missing = 0
    kinds: Counter[str] = Counter()
    for summary in summaries:
        if not summary:
            continue
        judged += summary.get("judged", 0)
        missing += summary.get("failed", 0)
        kinds.update(summary.get("failure_reasons") or {})
    return {"judgements": judged + missing, "missing": missing, "missing_by_kind": dict(sorted(kinds.items()))}


def describe_missing(counts: dict) -> str:
    kinds = ", ".join(f"{kind or 'unknown'} {n}" for kind, n in counts["missing_by_kind"].items())
    return f"{counts['missing']} of {counts['judgements']} judgements missing" + (f" ({kinds})" if kinds else "")


def judge_failure(results: dict[str, dict], max_failures: float) -> str | None:
    """The one-line complaint when any task's missing judgements exceed max_failures, else None."""
    over = []
    for task, result in results.items():
        counts = result.get("judged") if isinstance(result, dict) else None
        if counts and counts["judgements"] and counts["missing"] / counts["judgements"] > max_failures:
            over.append(f"{task}: {describe_missing(counts)}")
    if not over:
        return None
    return (f"{'; '.join(over)}, more than --judge_max_failures {max_failures:g} allows; the results are written, "
            f"the judged metrics of those items are left out")
