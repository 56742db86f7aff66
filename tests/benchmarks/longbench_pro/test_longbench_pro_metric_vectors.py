"""Every worked example of data/longbench_pro_metric_vectors.json: the exact outputs of the
official metric functions (rouge 1.0.1, jieba 0.42.1, pytrec_eval, Python 3.11 default recursion)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxeval.benchmarks.longbench_pro.metrics import METRICS, summary_max_rouge_l

VECTORS = Path(__file__).parent / "data" / "longbench_pro_metric_vectors.json"
CASES = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]


def test_vectors_are_present():
    assert len(CASES) == 51, f"expected the 51 official vectors at {VECTORS}"


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['metric']}-{c['note'][:40]}" for i, c in enumerate(CASES)])
def test_official_vector(case):
    if case["metric"] == "Summary_Max_Rouge_L":
        value = summary_max_rouge_l(case["answers"], case["prediction"], case["is_zh"])
    else:
        value = METRICS[case["metric"]](case["answers"], case["prediction"])
    assert value == pytest.approx(case["expected"], abs=1e-12), case["note"]
