"""RULER per-sample scores for `jaxeval report --reference`: each sample's official row value
(string_match_all's share of references found, string_match_part's any) x 100, keyed by the
journal key ruler/<task>/<length>/<sample>; group: the task; length: the unit's. Teacher-forced
runs pair their greedy match (0 or 100)."""

from __future__ import annotations

from jaxeval.report.data import number


def ruler_sample_scores(section: dict | None, samples: list[dict] | None) -> list | None:
    from jaxeval.report.paired import SampleScore, per_sample_rows

    rows = per_sample_rows((section or {}).get("outputs"), samples, "task", keyed=True)
    if rows is None:
        return None
    scores = []
    for _, record in rows:
        if not isinstance(record.get("key"), str) or "task" not in record:
            return None
        value = number(record.get("score")) if "score" in record else (
            100.0 * bool(record["greedy"]) if "greedy" in record else None)
        scores.append(SampleScore(record["key"], record["task"], str(record.get("length")), value))
    return scores
