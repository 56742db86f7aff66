"""Worked examples of the official scorer's quirks (docs/provenance.md#longbench-pro)."""

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


def _walk_shapes(n: int) -> dict[str, tuple[str, str]]:
    """(reference, hypothesis) pairs whose rouge 1.0.1 LCS walk is about n calls deep."""
    a, b = [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)]
    return {
        "chain": (" ".join(a + ["z"]), " ".join(b + ["z"])),  # 1 match, then n drops at i = n
        "identical": (" ".join(a), " ".join(a)),  # n matches, no table look-ups
        "refdrop": (" ".join(["c"] + a + ["y"]), "c y"),  # n reference drops at j = 1
        "short_ref_chain": (" ".join(a[:100] + ["z"]), " ".join(b + ["z"])),  # drops at i = 100
    }


# Deepest n that still gets a ROUGE-L score, found by running the official evaluation code
# (main.py --only_eval: its full call stack, rouge 1.0.1, default recursion limit 1000) on
# these shapes for n = 982..988 under CPython 3.10.13, 3.11.7 and 3.12.1 (3.8/3.9 behave as
# 3.10, 3.13 as 3.12). The walk has 987 levels on every version; the comparisons inside
# each call add 0-2 levels depending on the version, hence the spread. (jaxeval's first
# version allowed n + 1 <= 986 nested calls everywhere: right for "chain" on 3.11, one short
# for "identical" and "short_ref_chain", whose official scores it zeroed.)
DEEPEST_SCORED = {
    "python3.8-3.10": {"chain": 984, "identical": 985, "refdrop": 983, "short_ref_chain": 984},
    "python3.11": {"chain": 984, "identical": 986, "refdrop": 984, "short_ref_chain": 985},
    "python3.12+": {"chain": 985, "identical": 986, "refdrop": 984, "short_ref_chain": 985},
}


@pytest.mark.parametrize("recursion", list(DEEPEST_SCORED))
@pytest.mark.parametrize("shape", ["chain", "identical", "refdrop", "short_ref_chain"])
def test_recursion_error_zeroes_rouge_exactly_where_the_official_stack_overflows(recursion, shape):
    options = ScoringOptions(rouge_recursion=recursion)
    deepest = DEEPEST_SCORED[recursion][shape]
    ref, hyp = _walk_shapes(deepest)[shape]
    unlimited = summary_max_rouge_l([ref], hyp, False, ScoringOptions(rouge_recursion="none"))
    assert unlimited > 0 and summary_max_rouge_l([ref], hyp, False, options) == unlimited
    ref, hyp = _walk_shapes(deepest + 1)[shape]
    assert summary_max_rouge_l([ref], hyp, False, options) == 0.0
    assert summary_max_rouge_l([ref], hyp, False, ScoringOptions(rouge_recursion="none")) > 0
    # Chinese goes through jieba first, inside the same frame: the same words, the same limit
    assert summary_max_rouge_l([ref], hyp, True, options) == 0.0


def test_recursion_model_depth_worked_example():
    # ref "a b", hyp "a c": rouge 1.0.1's _recon(2, 2) mismatches (b/c; table[1,2] = 1 is not
    # > table[2,1] = 1, so j drops), _recon(2, 1) mismatches (b/a; table[1,1] = 1 > 0, i drops),
    # _recon(1, 1) matches (a), _recon(0, 0) is the bottom: calls 1..4. Extra levels per call:
    # 3.11 mismatch 1 -> max(1+1, 2+1, 3+0, 4+0) = 4; 3.10 everything >= 1 -> max(2, 3, 4, 5) = 5;
    # 3.12 none -> 4. No index exceeds 256, so mismatch_large never applies.
    from jaxeval.benchmarks.longbench_pro.metrics import ROUGE_RECURSION_MODELS as models
    assert models["python3.11"].depth(["a", "b"], ["a", "c"]) == 4
    assert models["python3.8-3.10"].depth(["a", "b"], ["a", "c"]) == 5
    assert models["python3.12+"].depth(["a", "b"], ["a", "c"]) == 4
    # 300 distinct words against 1: 300 hypothesis drops at i = 1, the first 44 with j > 256
    words = [f"w{i}" for i in range(300)]
    assert models["python3.11"].depth(["q"], words) == max(44 + 2, 300 + 1, 301)


def test_default_recursion_model_is_python_3_11():
    assert ScoringOptions().rouge_recursion == "python3.11"
    # identical 986-word summaries: the official 3.11 stack scores them (0.999999995)
    ref, hyp = _walk_shapes(986)["identical"]
    assert summary_max_rouge_l([ref], hyp, False) == pytest.approx(0.999999995, abs=1e-12)


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
