"""pred.py's answer extraction, template filling and middle cut; result.py's table."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.longbench_v2.prompts import TEMPLATES, extract_answer, fill, truncate
from jaxeval.benchmarks.longbench_v2.scoring import result_table


@pytest.mark.parametrize("response, pred", [
    ("The correct answer is (B)", "B"),
    ("**The correct answer is (C)**", "C"),  # every * removed first
    ("The correct answer is *(D)*", "D"),
    ("The correct answer is A.", "A"),  # the fallback without parentheses
    ("the correct answer is (C)", None),  # case-sensitive
    ("The correct answer is (E)", None),
    ("The correct answer is D, no: The correct answer is (A)", "A"),  # the parenthesised form is searched first
    ("The correct answer is (B) or The correct answer is (C)", "B"),  # the first match wins
    ("Answer: B", None),
    ("", None),
])
def test_extract_answer(response, pred):
    assert extract_answer(response) == pred


ITEM = {"context": "  a text that mentions $Q$ and $C_A$  ", "question": " Who? ", "choice_A": " one ",
        "choice_B": "two", "choice_C": "three", "choice_D": "four"}


def test_fill_replaces_in_pred_py_order_with_its_quirks():
    prompt = fill(TEMPLATES["0shot"], ITEM)
    # $DOC$ first, so the context's own $Q$ and $C_A$ are replaced by the question and choice A
    assert "<text>\na text that mentions Who? and one\n</text>" in prompt
    assert "question: Who?\nChoices:\n(A) one\n(B) two\n(C) three\n(D) four\n\nFormat" in prompt
    cot = fill(TEMPLATES["0shot_cot_ans"], ITEM, "because $Q$")
    assert cot.count("because $Q$") == 1 and "The text is too long and omitted here." in cot


def test_the_cut_keeps_the_larger_half_at_the_end_and_drops_special_tokens(bos_tokenizer):
    prompt = " ".join(f"w{i}" for i in range(40))
    ids = bos_tokenizer(prompt)["input_ids"]
    assert ids[0] == 0  # the BOS counts in the length, as tokenizer.encode counts it
    text, raw, cut = truncate(prompt, bos_tokenizer, 7)
    assert raw == len(ids) and cut
    assert text == bos_tokenizer.decode(ids[:3] + ids[-4:], skip_special_tokens=True)
    assert truncate(prompt, bos_tokenizer, len(ids)) == (prompt, len(ids), False)


def _row(difficulty, length, judge, pred="A"):
    return {"difficulty": difficulty, "length": length, "judge": judge, "pred": pred}


def test_result_table_as_result_py():
    rows = [_row("easy", "short", True), _row("hard", "medium", False), _row("hard", "long", True),
            _row("Hard", "huge", False, None), _row("easy", "long", True), _row("hard", "short", False)]
    table = result_table(rows)
    # "Hard" is not "easy": hard; "huge" is neither short nor medium: long
    assert table["overall"] == round(100 * 3 / 6, 1) == 50.0
    assert (table["easy"], table["hard"]) == (100.0, 25.0)
    assert (table["short"], table["medium"], table["long"]) == (50.0, 0.0, round(100 * 2 / 3, 1))
    assert table["counts"] == {"overall": 6, "easy": 2, "hard": 4, "short": 2, "medium": 1, "long": 3}
    assert result_table(rows, compensated=True)["hard"] == round(100 * 1.25 / 4, 1)


def test_an_empty_bucket_is_none_where_result_py_divides_by_zero():
    table = result_table([_row("easy", "short", True)])
    assert table["hard"] is None and table["medium"] is None and table["overall"] == 100.0
