"""HELMET per-sample scores for paired comparisons (`jaxeval report --reference`).

A sample's score is its dataset's HELMET headline measure (scoring.HEADLINE: the first one,
collect_results' column for the dataset, e.g. ruler_recall for RULER needles, NDCG@10 for
re-ranking, rougeL_f1 for InfBench QA) x 100, as HELMET's averages are scaled. Judged measures
(gpt4_score, gpt4_f1) have no per-item value in the outputs: those samples are counted as not
scored. Key: the journal's (`helmet/<dataset>/<length>/<id>/<n>`); group: the dataset; length:
the unit's; depth: the needle's place (recall datasets, depth.py). Read from the details'
`outputs` or the --log_samples rows; outputs written before they carried a key are not paired.
"""

from __future__ import annotations

from jaxeval.benchmarks.helmet.depth import depth_label
from jaxeval.benchmarks.helmet.scoring import HEADLINE
from jaxeval.benchmarks.helmet.tasks import dataset_key
from jaxeval.report.data import number


def headline_measure(dataset: str) -> str | None:
    measures = HEADLINE.get(dataset_key(dataset))
    return measures[0] if measures else None


def helmet_sample_scores(task: str, section: dict | None, samples: list[dict] | None) -> list | None:
    from jaxeval.report.paired import SampleScore, per_sample_rows

    rows = per_sample_rows((section or {}).get("outputs"), samples, "unit", keyed=True)
    if rows is None:
        return None
    scores = []
    for unit, record in rows:
        if not isinstance(unit, str) or "/" not in unit or not isinstance(record.get("key"), str):
            return None  # not jaxeval's layout: nothing to pair by
        dataset, length = unit.rsplit("/", 1)
        measure = headline_measure(dataset)
        raw = record.get(measure) if measure else None
        value = float(raw) if isinstance(raw, bool) else number(raw)  # exact-match measures are per-item booleans
        scores.append(SampleScore(record["key"], dataset_key(dataset), length,
                                  None if value is None else 100 * value, depth_label(record.get("needle_depth"))))
    return scores
