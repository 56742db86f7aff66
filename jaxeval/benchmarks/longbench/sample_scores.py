"""LongBench / LongBench-E per-sample scores for paired comparisons (`jaxeval report --reference`).

A sample's score is its official metric x 100 (a dataset's score is their mean). Its key is the
journal's (`longbench/<dataset>/test/<index>/<_id>/0`). Length: LongBench-E's official bucket of
the record's `length`; LongBench v1 (no official split) the prompt's tokens before truncation,
binned as the report's length plot bins them. Read from the details' `outputs` (what every run
writes) or, for results without them, the --log_samples rows.
"""

from __future__ import annotations

from jaxeval.benchmarks.longbench.report_view import _bin
from jaxeval.benchmarks.longbench.scoring import length_bucket
from jaxeval.report.data import number


def _key(output: dict) -> str | None:
    key = output.get("key")
    if isinstance(key, list):
        return "/".join(map(str, key)) + "/0"
    return key if isinstance(key, str) else None


def _length(output: dict, e: bool) -> str | None:
    if e:
        length = output.get("length")
        return length_bucket(length) if isinstance(length, int) and not isinstance(length, bool) else None
    tokens = output.get("raw_prompt_tokens")
    return _bin(tokens) if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def longbench_sample_scores(task: str, section: dict | None, samples: list[dict] | None) -> list | None:
    from jaxeval.report.paired import SampleScore, per_sample_rows

    e = task == "longbench_e"
    rows = per_sample_rows((section or {}).get("outputs"), samples, "dataset")
    if rows is None:
        return None
    scores = []
    for dataset, output in rows:
        key = _key(output)
        if key is None or not isinstance(dataset, str):  # not jaxeval's layout: nothing to pair by
            return None
        score = number(output.get("score"))
        scores.append(SampleScore(key, dataset, _length(output, e), None if score is None else 100 * score))
    return scores
