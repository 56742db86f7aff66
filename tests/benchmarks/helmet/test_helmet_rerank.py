"""Re-ranking: HELMET's ranking parser and trec_eval's NDCG@10 (worked examples)."""

from __future__ import annotations

import math

import pytest

from jaxeval.benchmarks.helmet.rerank import k_values_for, parse_rankings, rerank_post_process, retrieval_metrics


def test_parse_rankings_strips_id_decoration_and_keeps_first_occurrence():
    assert parse_rankings("Ranking: [ID: 3] > [ID: 1] > 2\nthanks") == {"3": 3, "1": 2, "2": 1}
    assert parse_rankings("3 > 1 > 3 > 2") == {"3": 4, "1": 3, "2": 1}  # the repeated 3 keeps score 4


def test_parse_rankings_takes_the_longest_run():
    assert parse_rankings("Ranking: 1 > 2. Then 15 > 6 > 7") == {"15": 3, "6": 2, "7": 1}


def test_parse_rankings_without_numbers_returns_the_processed_text():
    assert parse_rankings("No IDEA: [none]") == {"no ea none": 1}


def test_ndcg_at_10_worked_example():
    qrels = {"1": 2, "2": 0, "3": 1, "9": 3}  # "9" is relevant but never ranked
    m = retrieval_metrics({"3": 3, "1": 2, "2": 1, "77": 0.5}, qrels, [1, 5, 10])
    dcg = 1 / math.log2(2) + 2 / math.log2(3)  # ranks: 3 (gain 1), 1 (gain 2), 2 (0), 77 (unjudged: 0)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert m["NDCG@10"] == round(dcg / idcg, 5)
    assert m["P@5"] == round(2 / 5, 5) and m["Recall@10"] == round(2 / 3, 5)
    assert m["MRR"] == 1.0 and m["NDCG@1"] == round(1 / 3, 5)
    assert m["MAP@10"] == round((1 / 1 + 2 / 2) / 3, 5)


def test_rerank_post_process_uses_qrel_labels_as_strings_and_counts_predictions():
    qrel = [["4", "1"], ["5", "0"], ["6", "0"], ["7", "0"], ["8", "0"]]
    metrics, extra = rerank_post_process("Ranking: 5 > 4", qrel, 5)
    assert extra["parsed_output"] == {"5": 2, "4": 1} and metrics["num_preds"] == 2
    assert metrics["NDCG@1"] == 0.0 and metrics["NDCG@5"] == pytest.approx(round(1 / math.log2(3), 5))
    assert "NDCG@10" not in metrics  # k limited to the number of candidates


def test_k_values_limited_to_candidates():
    assert k_values_for(50) == [1, 5, 10, 20, 50] and k_values_for(1000)[-1] == 1000
