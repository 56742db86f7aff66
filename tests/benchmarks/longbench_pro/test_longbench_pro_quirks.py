"""Worked examples of the official scorer's quirks (specs/longbench_pro_spec.md §3, §4, §7)."""

from __future__ import annotations

import math

import pytest

from jaxeval.benchmarks.longbench_pro.metrics import (
    ScoringOptions, calculate_metric, ndcg, summary, summary_max_rouge_l,
)
from jaxeval.benchmarks.longbench_pro.parsing import answer_area, normalize_summary, prediction_lines

from conftest import FakeSemSim

T4 = "T4.1 Global-Coverage Constrained Summary"


def test_blank_lines_inside_the_answer_are_items():
    assert prediction_lines("[Answer]\n\nA\n\n  B  c \n") == ["a", "", "b c"]


def test_last_answer_marker_and_priority_over_chinese_marker():
    assert answer_area("[答案]\nX\n[Answer]\nY\n[Answer]\nZ\n[答案]\nW") == "Z\n[答案]\nW"
    assert answer_area("思考\n[答案]\n甲\n[答案]\n乙") == "乙"
    assert answer_area("  no marker at all \n") == "no marker at all"


def test_summary_keeps_the_marker_and_reasoning_and_lowercases_what_is_embedded():
    semsim = FakeSemSim(0.5)
    value = summary(["The Cat  sat."], "Let me think.\n[Answer]\nThe cat sat.", False, semsim)
    assert semsim.seen == [(["the cat sat."], "let me think. [answer] the cat sat.")]
    rouge = summary_max_rouge_l(["The Cat  sat."], "Let me think.\n[Answer]\nThe cat sat.", False)
    assert 0 < rouge < 1 and value == pytest.approx(0.25 + 0.5 * rouge, abs=1e-15)
    assert normalize_summary("  A\n\tB  ") == "a b"


def test_one_bad_reference_zeroes_the_whole_rouge_part():
    # the second reference is empty: rouge raises for it, so even the perfect first match scores 0
    assert summary_max_rouge_l(["the cat sat", "the dog ran"], "the cat sat", False) == pytest.approx(0.999999995)
    assert summary_max_rouge_l(["the cat sat", ""], "the cat sat", False) == 0.0
    assert summary(["the cat sat", ""], "the cat sat", False, FakeSemSim(0.8)) == pytest.approx(0.4)


def _chain(n: int) -> tuple[str, str]:
    """Reference and hypothesis of n distinct words plus one shared last word: the LCS walk of
    rouge 1.0.1 nests n + 2 calls; one common word of n + 1 on each side gives P = R = 1 / (n + 1)."""
    return (" ".join(f"a{i}" for i in range(n)) + " z", " ".join(f"b{i}" for i in range(n)) + " z")


@pytest.mark.parametrize("recursion, deepest_ok", [("python3.11+", 984), ("python3.8-3.10", 983)])
def test_recursion_error_zeroes_rouge_at_the_measured_depth(recursion, deepest_ok):
    options = ScoringOptions(rouge_recursion=recursion)
    ref, hyp = _chain(deepest_ok)
    expected = 2 * (1 / (deepest_ok + 1)) ** 2 / (2 / (deepest_ok + 1) + 1e-8)
    assert summary_max_rouge_l([ref], hyp, False, options) == pytest.approx(expected, rel=1e-12)
    ref, hyp = _chain(deepest_ok + 1)
    assert summary_max_rouge_l([ref], hyp, False, options) == 0.0
    assert summary_max_rouge_l([ref], hyp, False, ScoringOptions(rouge_recursion="none")) > 0


def test_out_of_range_summary_fails_the_sample():
    # identical text: ROUGE-L 0.999999995, and a float32 cosine a hair above 1 pushes the sum past 1
    outcome = calculate_metric(T4, ["the cat sat"], "the cat sat", False, FakeSemSim(1.0000001))
    assert (outcome.success, outcome.value) == (False, 0.0) and "not in [0, 1]" in outcome.error
    outcome = calculate_metric(T4, ["the cat sat"], "the cat sat", False, FakeSemSim(1.0))
    assert outcome.success and outcome.value == pytest.approx(0.9999999975)


@pytest.mark.parametrize("task, prediction, semsim, error", [
    ("T3.2 Single-Hop Fact QA", "", None, "empty prediction"),
    ("T99.1 Unknown", "[Answer]\nB", None, "unknown secondary task"),
    (T4, "a summary", None, "no embedding model"),
])
def test_failures_score_zero_and_count(task, prediction, semsim, error):
    outcome = calculate_metric(task, ["B"], prediction, False, semsim)
    assert (outcome.success, outcome.value) == (False, 0.0) and error in outcome.error


def test_whitespace_only_prediction_is_not_a_failure():
    # only "" fails; "  " is a real (wrong) prediction that scores 0 without counting as a failure
    outcome = calculate_metric("T3.2 Single-Hop Fact QA", ["B"], "  ", False, None)
    assert (outcome.success, outcome.value) == (True, 0.0)


def test_ndcg_repeated_gold_item_keeps_its_last_relevance_and_k_counts_it_twice():
    # gold a, b, a: relevance a=1 (overwritten), b=2; k = 3. Prediction a, b.
    dcg, ideal = 1 + 2 / math.log2(3), 2 + 1 / math.log2(3)
    assert ndcg(["a", "b", "a"], "[Answer]\na\nb") == pytest.approx(dcg / ideal, abs=1e-15)


def test_ndcg_uses_linear_gain_not_exponential():
    # gold a, b, c (rel 3, 2, 1); prediction c, b, a
    dcg = 1 + 2 / math.log2(3) + 3 / 2
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert ndcg(["a", "b", "c"], "c\nb\na") == pytest.approx(dcg / ideal, abs=1e-15)
