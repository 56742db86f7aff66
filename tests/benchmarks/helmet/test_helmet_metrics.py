"""HELMET's answer metrics: each quirk of its utils.py / data.py post-processing, with a worked example."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.helmet.metrics import (
    calculate_metrics, choice_post_process, default_post_process, f1, flatten_golds, icl_post_process,
    json_kv_post_process, parse_output, ruler_post_process,
)


def test_substring_exact_match_is_on_normalised_text():
    m = calculate_metrics("I think it was THE U.S.A., really", ["u.s.a"])
    assert m["substring_exact_match"] and not m["exact_match"]


def test_f1_yes_no_rule():
    assert f1("yes", "no") == 0
    assert f1("no it is", "no") == 0  # gold is "no", prediction differs after normalisation
    assert f1("maybe yes", "yes maybe") == 1.0  # neither side is exactly yes/no/noanswer: plain token F1
    assert f1("the red car", "red car") == 1.0


def test_gold_list_flattened_only_when_first_item_is_a_list():
    assert flatten_golds([["a", "b"], ["c"]]) == ["a", "b", "c"]
    assert flatten_golds("x") == ["x"]
    assert flatten_golds(["a", ["b"]]) == ["a", ["b"]]


def test_rouge_uses_porter_stemmer_and_gold_as_target():
    m = calculate_metrics("the cats sat", ["the cat sat"])
    assert m["rougeL_f1"] == 1.0  # "cats" stems to "cat"
    m = calculate_metrics("cat", ["the cat sat down"])
    assert m["rougeL_recall"] == pytest.approx(1 / 4) and m["rougeL_f1"] == pytest.approx(2 * 1 * 0.25 / 1.25)


def test_rouge_f1_and_recall_maxed_over_golds_separately():
    m = calculate_metrics("a b", ["a b c d e f", "a x"])
    # gold 1: P=1, R=1/3 -> F=0.5; gold 2: LCS "a", P=1/2, R=1/2 -> F=0.5; recall max comes from gold 2
    assert m["rougeL_recall"] == pytest.approx(0.5) and m["rougeL_f1"] == pytest.approx(0.5)


@pytest.mark.parametrize("output,prefix,parsed", [
    ("Answer: Paris\nLondon", "Answer:", "Paris"),
    ("The answer: answer: Rome", "Answer:", "Rome"),  # first occurrence, case-insensitive, repeated prefix removed
    ("Paris is big\nAnswer", "Answer:", "Paris is big"),  # no prefix: first line
    ("Corresponding value: abc-1\n", "corresponding value:", "abc-1"),
    ("\nsecond line", "Answer:", ""),  # the first line is empty
])
def test_parse_output(output, prefix, parsed):
    assert parse_output(output, prefix) == parsed


def test_default_post_process_takes_max_of_raw_and_parsed():
    metrics, extra = default_post_process("Answer: Paris\nIt is in France.", ["Paris"])
    assert extra["parsed_output"] == "Paris"
    assert metrics["exact_match"] and metrics["f1"] == 1.0  # from the parsed output
    metrics, _ = default_post_process("Answer: London\nNo wait, Paris.", ["Paris"])
    assert metrics["substring_exact_match"] and not metrics["exact_match"]  # SubEM scans the raw output


def test_json_kv_parses_after_corresponding_value():
    metrics, extra = json_kv_post_process("Corresponding value: 1f2e-77\nKey: x", ["1f2e-77"])
    assert extra["parsed_output"] == "1f2e-77" and metrics["exact_match"]


def test_ruler_recall_counts_case_insensitive_substrings_of_raw_output():
    metrics, extra = ruler_post_process("The numbers are 12 and ABC-9.", ["12", "abc-9", "77"])
    assert metrics == {"ruler_recall": pytest.approx(2 / 3)} and extra["parsed_output"].startswith("The")


def test_infbench_choice_rules():
    gold = ["B", "B. the old cat"]
    metrics, _ = choice_post_process("Answer: B", gold)
    assert metrics["exact_match"] and not metrics["substring_exact_match"]
    metrics, _ = choice_post_process("I pick b. The Old Cat because", gold)
    assert metrics["substring_exact_match"] and metrics["exact_match"]
    metrics, _ = choice_post_process("B. the  old cat", gold)  # long form only after lower-casing, not normalising
    assert not metrics["substring_exact_match"]


def test_icl_scores_only_the_text_after_label():
    metrics, extra = icl_post_process("label: 3\nlabel: 4", "3")
    assert extra["parsed_output"] == "3" and metrics["exact_match"]
    metrics, _ = icl_post_process("label: 13", "3")
    assert not metrics["exact_match"]
    metrics, _ = icl_post_process("foo 3 bar", "3")  # no max with the raw output: EM of the first line only
    assert not metrics["exact_match"] and metrics["substring_exact_match"]
