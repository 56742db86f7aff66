"""ALCE (citation category): str_em, QAMPARI recall, AutoAIS citation recall/precision with a fake NLI judge."""

from __future__ import annotations

import re

import pytest
from helmet_helpers import FakeJudge

from jaxeval.benchmarks.helmet import alce
from jaxeval.benchmarks.helmet.scoring import average_metrics, score_alce

DOCS = [{"title": "Paris", "text": "Paris is the capital of France."},
        {"title": "Rome", "text": "Rome is the capital of Italy."},
        {"title": "Misc", "text": "Nothing useful."}]


def nli_by_words(prompt: str) -> str:
    """Entailed when every word of the hypothesis occurs in the premise."""
    premise, hypothesis = re.match(r"premise: (.*) hypothesis: (.*)", prompt, flags=re.DOTALL).groups()
    words = lambda t: set(re.findall(r"\w+", t.lower()))  # noqa: E731
    return "1" if words(hypothesis) <= words(premise) else "0"


def test_remove_citations():
    assert alce.remove_citations("Paris is big [1][2]. Rome [3] too.") == "Paris is big. Rome too."


def test_asqa_str_em_is_mean_over_qa_pairs():
    pairs = [{"short_answers": ["Paris"]}, {"short_answers": ["Rome", "Roma"]}, {"short_answers": ["Oslo"]}]
    assert alce.asqa_str_em("It is Paris [1].\nAlso roma [2].", pairs) == pytest.approx(2 / 3)


def test_qampari_rec_top5_caps_at_five():
    answers = [[f"a{i}"] for i in range(8)]
    scores = alce.qampari_scores("a0 [1], a1, a2, a3, a4, a5, zz.", answers)
    assert scores["qampari_rec_top5"] == 1.0 and scores["qampari_rec"] == pytest.approx(6 / 8)
    assert scores["qampari_prec"] == pytest.approx(6 / 7) and scores["num_preds"] == 7


def test_citation_recall_and_precision():
    judge = FakeJudge(nli_by_words)
    checker = alce.NLIChecker(judge)
    split = alce.sentence_splitter()[0]
    # sentence 1: supported by [1]; sentence 2: cites [1][2], entailed by [2] alone -> [1] is an over-citation
    # sentence 3: no citation -> 0; sentence 4: out-of-range citation -> 0
    output = "Paris is the capital of France [1]. Rome is the capital of Italy [1][2]. Oslo is cold. Misc [9]."
    scores = alce.citation_scores(output, DOCS, checker, split)
    assert scores["citation_rec"] == pytest.approx(2 / 4)
    assert scores["citation_prec"] == pytest.approx(2 / 3)  # 3 citations counted, [1] of sentence 2 unnecessary


def test_failed_nli_call_is_counted_not_scored_zero():
    judge = FakeJudge(lambda prompt: None)
    items = [{"output": "Paris is the capital of France [1].", "qa_pairs": [{"short_answers": ["Paris"]}],
              "docs": DOCS, "question": "q"}]
    per_item, notes = score_alce("alce_asqa_30", items, nli=judge)
    assert per_item[0]["citation_rec"] is None and per_item[0]["judge_failed"]
    assert notes["judge_failures"] == 1
    averages = average_metrics(per_item)
    assert averages["str_em"] == 100.0 and "citation_rec" not in averages


def test_without_nli_judge_citations_are_not_scored():
    items = [{"output": "x, y", "answers": [["x"], ["z"]], "question": "q", "docs": DOCS}]
    per_item, notes = score_alce("alce_qampari_30", items)
    assert "citation_rec" not in per_item[0] and notes["citation"].startswith("not scored")
    assert average_metrics(per_item, unscaled=("num_preds",))["num_preds"] == 2
