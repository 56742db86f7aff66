"""The card's grade and bins on rows built to hit their edges."""

from __future__ import annotations

from difflib import SequenceMatcher

import pytest

from jaxeval.benchmarks.mrcr.grading import BIN_LABELS, bin_of, grade

PREFIX = "aB3dE6gH9j"


@pytest.mark.parametrize("response, expected", [
    ("nothing of the kind", 0.0),  # no prefix
    ("", 0.0),  # empty response
    (" " + PREFIX + "the answer", 0.0),  # a leading space fails: no stripping
    ("\n" + PREFIX + "the answer", 0.0),
    (PREFIX.lower() + "the answer", 0.0),  # case matters
    (PREFIX + "the answer", 1.0),
    (PREFIX, 0.0),  # prefix only: "" against "the answer"
])
def test_prefix_rules(response, expected):
    assert grade(response, PREFIX + "the answer", PREFIX) == expected


def test_prefix_only_against_an_empty_answer_is_one():
    assert grade(PREFIX, PREFIX, PREFIX) == 1.0  # SequenceMatcher("", "").ratio() is 1.0


def test_trailing_whitespace_changes_the_ratio():
    assert grade(PREFIX + "the answer\n", PREFIX + "the answer", PREFIX) == pytest.approx(2 * 10 / 21)


def test_unicode_is_compared_by_code_point():
    answer = PREFIX + "Ünïcödé — 詩 about tapirs"
    assert grade(PREFIX + "Unicode — 詩 about tapirs", answer, PREFIX) == pytest.approx(
        SequenceMatcher(None, "Unicode — 詩 about tapirs", "Ünïcödé — 詩 about tapirs").ratio())
    assert grade(answer, answer, PREFIX) == 1.0


def test_response_first_with_autojunk_as_the_card():
    """With 200+ characters in the answer, difflib drops its characters that fill more than 1% of
    it as junk: swapping the arguments (or autojunk=False) gives another number."""
    answer = "ab" * 150 + "xyz"
    response = "b" * 10 + "xyz"
    card = SequenceMatcher(None, response, answer).ratio()
    assert card != SequenceMatcher(None, answer, response).ratio()
    assert card != SequenceMatcher(None, response, answer, autojunk=False).ratio()
    assert grade(PREFIX + response, PREFIX + answer, PREFIX) == card == pytest.approx(8 / 316)  # "b" and "xyz" match; the junk "a"/"b" runs do not


def test_the_answer_loses_only_a_leading_prefix():
    assert grade(PREFIX + "x", "x" + PREFIX, PREFIX) == pytest.approx(2 / 12)  # removeprefix is a no-op on it


def test_a_non_string_response_raises_as_the_card():
    with pytest.raises(TypeError):
        grade(None, PREFIX, PREFIX)


@pytest.mark.parametrize("tokens, label", [
    (0, "0-4k"), (4095, "0-4k"), (4096, "4k-8k"), (8192, "4k-8k"), (8193, "8k-16k"), (16384, "8k-16k"),
    (131072, "64k-128k"), (131073, "128k-256k"), (1048576, "512k-1M"), (1048577, "1M+")])
def test_bins_first_closed_then_left_open(tokens, label):
    assert bin_of(tokens) == label


def test_the_cards_eight_bins():
    assert BIN_LABELS == ("4k-8k", "8k-16k", "16k-32k", "32k-64k", "64k-128k", "128k-256k", "256k-512k", "512k-1M")
