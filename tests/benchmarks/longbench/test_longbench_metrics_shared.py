"""The shared metric modules LongBench uses (jaxeval.metrics), beyond the worked examples."""

from __future__ import annotations

import random

import pytest

from jaxeval.metrics.edit_similarity import fuzz_ratio
from jaxeval.metrics.rouge_pltrdy import (
    RecursionModel, RougeInputError, RougeRecursionError, lcs_prefix_rows, lcs_walk, rouge_l_summary_f,
)
from jaxeval.metrics.token_f1 import CHINESE_PUNCTUATION, normalize_answer_en, token_f1


def naive_lcs_table(ref, hyp):
    table = [[0] * (len(hyp) + 1) for _ in range(len(ref) + 1)]
    for i in range(1, len(ref) + 1):
        for j in range(1, len(hyp) + 1):
            table[i][j] = (table[i - 1][j - 1] + 1 if ref[i - 1] == hyp[j - 1]
                           else max(table[i - 1][j], table[i][j - 1]))
    return table


def test_bit_parallel_lcs_rows_match_the_dynamic_programme():
    rng = random.Random(7)
    for _ in range(300):
        ref = [rng.choice("abcd") for _ in range(rng.randint(0, 30))]
        hyp = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        rows, table = lcs_prefix_rows(ref, hyp), naive_lcs_table(ref, hyp)
        for i in range(len(ref) + 1):
            for j in range(len(hyp) + 1):
                assert j - (rows[i] & ((1 << j) - 1)).bit_count() == table[i][j]


def test_walk_moves_and_words():
    assert lcs_walk(["z"] + ["x"] * 3, ["z"] + ["y"] * 2) == ({"z"}, 6)  # 2 + 3 drops, 1 match
    assert lcs_walk([], ["a"]) == (set(), 0)


def test_rouge_raises_where_the_package_raises():
    with pytest.raises(RougeInputError):
        rouge_l_summary_f("", "a")
    with pytest.raises(RougeInputError):
        rouge_l_summary_f("a", "...")
    # "d e f" against "a b c": 3 drops then the bottom, calls 1..4 with no extra levels
    with pytest.raises(RougeRecursionError):
        rouge_l_summary_f("a b c", "d e f", recursion=RecursionModel(3))
    assert rouge_l_summary_f("a b c", "d e f", recursion=RecursionModel(4)) == 0.0


def test_normalisation_and_f1():
    assert normalize_answer_en("The  Eiffel-Tower!") == "eiffeltower"
    assert token_f1([], ["a"]) == 0 and token_f1(["a", "b"], ["a"]) == 2 / 3
    assert CHINESE_PUNCTUATION.endswith(".") and "《" not in CHINESE_PUNCTUATION and "》" in CHINESE_PUNCTUATION


def test_fuzz_ratio_none_and_autojunk():
    from difflib import SequenceMatcher

    assert fuzz_ratio(None, "a") == 0 and fuzz_ratio("abc", "abc") == 100
    pred = "        return self._client.request(method='POST', url=url, data=payload)"
    gold = ("        return self._client.request(method='POST', url=self._base_url + '/v1/items', "
            "headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'}, "
            "data=json.dumps(payload), timeout=30)")
    assert len(gold) >= 200  # difflib's autojunk applies
    assert fuzz_ratio(pred, gold) == 44
    assert round(100 * SequenceMatcher(None, pred, gold, autojunk=False).ratio()) == 53
