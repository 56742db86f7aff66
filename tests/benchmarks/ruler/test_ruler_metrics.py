"""RULER's scoring against worked examples (spec: RULER: scoring; scripts/eval/evaluate.py and
scripts/eval/synthetic/constants.py), and the effective length as the paper defines it."""

import pytest

from jaxeval.benchmarks.ruler.metrics import nulls, postprocess, task_score
from jaxeval.benchmarks.ruler.summary import length_averages
from jaxeval.benchmarks.ruler.tasks import TASKS, parse_lengths
from jaxeval.errors import ConfigError


def test_postprocess_strips_and_turns_control_characters_into_newlines():
    assert postprocess("  \tThe answer\tis\r 42\x00.\n ") == "The answer\nis\n 42\n."
    assert postprocess("\n\n\n") == ""


def test_string_match_all_averages_the_share_of_references_found():
    preds = ["the numbers are 1234567 and 7654321", "only 1234567", "nothing"]
    refs = [["1234567", "7654321"], ["1234567", "7654321"], ["1234567"]]
    # (1 + 0.5 + 0) / 3 * 100 = 50.0
    assert task_score("string_match_all", preds, refs) == 50.0


def test_string_match_is_a_case_insensitive_substring_without_word_boundaries():
    assert task_score("string_match_all", ["ID 9123456"], [["12345"]]) == 100.0
    assert task_score("string_match_all", ["ABASHED-ADVENT"], [["abashed-advent"]]) == 100.0


def test_string_match_part_counts_a_row_when_any_reference_is_found():
    preds = ["Paris, France", "London", "x"]
    refs = [["paris", "Lyon"], ["Berlin", "Rome"], ["x", "y"]]
    assert task_score("string_match_part", preds, refs) == round(2 / 3 * 100, 2) == 66.67


def test_scores_round_as_the_official_float_arithmetic():
    # sum of row values / n * 100, then round(., 2): 1/3 of 4 refs over 3 rows
    preds, refs = ["a", "", ""], [["a", "b", "c"], ["q"], ["q"]]
    assert task_score("string_match_all", preds, refs) == round((1 / 3) / 3 * 100, 2) == 11.11
    assert nulls([postprocess(p) for p in ["", " \n", "x"]]) == "2/3"


def _units(scores_by_length):
    return [{"task": t, "length": n, "score": s} for n, scores in scores_by_length.items()
            for t, s in zip(TASKS, scores)]


def test_effective_length_is_the_largest_length_whose_average_is_above_85_6():
    result = length_averages(_units({4096: [90.0] * 13, 8192: [85.6] * 13, 16384: [86.0] * 13}), list(TASKS), False)
    assert result["averages"] == {"4096": 90.0, "8192": 85.6, "16384": 86.0}
    assert result["effective_length"] == 16384  # the largest above the threshold, 85.6 itself is not above


def test_effective_length_needs_all_13_tasks_and_is_none_below_threshold():
    subset = ["niah_single_1", "vt"]
    partial = length_averages([{"task": t, "length": 4096, "score": 100.0} for t in subset], subset, False)
    assert partial["effective_length"] is None and "13 tasks" in partial["effective_length_note"]
    low = length_averages(_units({4096: [50.0] * 13}), list(TASKS), False)
    assert low["effective_length"] is None and "below the shortest" in low["effective_length_note"]
    tf = length_averages(_units({4096: [None] * 13}), list(TASKS), True)
    assert tf["effective_length"] is None and tf["averages"] == {"4096": None}


def test_lengths_flag():
    assert parse_lengths("131072, 4k,4096") == [4096, 131072]
    with pytest.raises(ConfigError, match="--ruler_lengths"):
        parse_lengths("4096,lots")
