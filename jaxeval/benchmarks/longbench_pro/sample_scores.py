"""LongBench Pro per-question scores for paired comparisons (`jaxeval report --reference`).

The unit is the question, as in the official overall metric: its score is the mean metric over
its runs (bon_idx 1..n), its key the journal's without the run part (`longbench_pro/<mode>/<id>`),
its group the secondary task, its length the official token_length label. Read from the
details' `samples` (every run keeps them) or the --log_samples rows.
"""

from __future__ import annotations

from jaxeval.report.data import number


def longbench_pro_sample_scores(task: str, section: dict | None, samples: list[dict] | None) -> list | None:
    from jaxeval.report.paired import SampleScore

    rows = (section or {}).get("samples")
    if not isinstance(rows, list) or not rows:
        rows = samples
    if not rows:
        return None
    questions: dict[str, list[dict]] = {}
    for row in rows:
        key = row.get("key")
        if not isinstance(key, str) or "/" not in key:  # not jaxeval's layout: nothing to pair by
            return None
        questions.setdefault(key.rsplit("/", 1)[0], []).append(row)
    scores = []
    for key, runs in questions.items():
        metrics = [number(run.get("metric")) for run in runs]
        score = None if any(m is None for m in metrics) else sum(metrics) / len(metrics)
        first = runs[0]
        scores.append(SampleScore(key, str(first.get("secondary_task") or "?"), first.get("token_length"), score))
    return scores
