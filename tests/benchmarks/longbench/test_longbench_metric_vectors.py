"""Every worked example of data/longbench_metric_vectors.json: one official metric call each,
with the exact value (repr) the official metrics.py returned."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.longbench.metrics import METRICS
from jaxeval.benchmarks.longbench.tasks import ALL_CLASSES
from longbench_helpers import VECTORS

CLASS_PLACEHOLDERS = {"<trec all_classes>": VECTORS["trec_all_classes"],
                      "<lsht all_classes>": VECTORS["lsht_all_classes"]}


def _all_classes(vector: dict):
    """The file's all_classes column holds the list, a placeholder for the trec/lsht list, or
    (for metrics that ignore it) a note."""
    value = vector["all_classes"]
    if isinstance(value, list):
        return value
    return CLASS_PLACEHOLDERS.get(value)


def _id(vector: dict) -> str:
    return f"{vector['metric']}:{vector['prediction'][:30]!r}->{vector['ground_truth'][:20]!r}"


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[_id(v) for v in VECTORS["vectors"]])
def test_metric_vector(vector):
    score = METRICS[vector["metric"]](vector["prediction"], vector["ground_truth"], _all_classes(vector))
    assert repr(score) == vector["score_repr"]
    assert score == vector["score"]


def test_every_metric_has_vectors():
    assert {v["metric"] for v in VECTORS["vectors"]} == set(METRICS)


def test_packaged_class_lists_are_the_official_ones():
    assert list(ALL_CLASSES["trec"]) == VECTORS["trec_all_classes"]
    assert list(ALL_CLASSES["lsht"]) == VECTORS["lsht_all_classes"]
    assert "Lasting time of somethin" in ALL_CLASSES["trec"]  # the upstream typo, kept
