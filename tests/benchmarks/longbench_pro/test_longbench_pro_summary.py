"""Aggregation into the official summary JSON (modules/evaluation.py Evaluator.metric_summary; docs/provenance.md#longbench-pro)."""

from __future__ import annotations

import pytest

from jaxeval.benchmarks.longbench_pro.scoring import summarize_rows
from jaxeval.benchmarks.longbench_pro.summary import best_of_n, official_summary, pass_rate

OFFICIAL_KEYS = [
    "date", "total_questions_num", "inference_iterations", "total_samples_num", "fail_samples_num",
    "inference_inconsistent_samples_num", "average_overall_metric", "inference_iteration_1_overall_metric",
    "inference_iteration_2_overall_metric", "inference_iteration_3_overall_metric", "average_token_length_metric",
    "average_contextual_requirement_metric", "average_difficulty_metric", "average_primary_task_metric",
    "average_language_metric", "BoN-1", "pass@1", "BoN-2", "pass@2", "BoN-3", "pass@3",
]


def row(qid, run, metric, primary="T3. Evidence-Grounded QA", secondary="T3.2 Single-Hop Fact QA", length="8k",
        language="English", difficulty="Easy", requirement="Partial", success=True):
    return {"id": qid, "bon_idx": run, "metric": metric, "success": success, "primary_task": primary,
            "secondary_task": secondary, "token_length": length, "language": language, "difficulty": difficulty,
            "contextual_requirement": requirement}


T4 = {"primary": "T4. Summarization & Synthesis", "secondary": "T4.2 Query-Focused Summary"}


@pytest.fixture
def rows():
    return [row("q1", 1, 1.0), row("q1", 2, 0.0), row("q1", 3, 1.0),
            row("q2", 1, 0.7, length="256k", language="Chinese", **T4), row("q2", 2, 0.6, **T4),
            row("q2", 3, 0.65, **T4),
            row("q3", 1, 0.0, difficulty="Extreme", requirement="Full", success=False), row("q3", 2, 0.5),
            row("q3", 3, 0.25)]


def test_official_keys_and_means(rows):
    s = official_summary(rows, fail_samples_num=1, bon_num=3, date="2026-01-07")
    assert list(s) == OFFICIAL_KEYS
    q1, q2, q3 = 2 / 3, (0.7 + 0.6 + 0.65) / 3, 0.75 / 3
    assert s["average_overall_metric"] == pytest.approx((q1 + q2 + q3) / 3, abs=1e-15)
    runs = [s[f"inference_iteration_{i}_overall_metric"] for i in (1, 2, 3)]
    assert runs == pytest.approx([1.7 / 3, 1.1 / 3, 1.9 / 3])
    assert sum(runs) / 3 == pytest.approx(s["average_overall_metric"], abs=1e-15)  # complete runs: equal
    assert (s["total_questions_num"], s["total_samples_num"], s["fail_samples_num"]) == (3, 9, 1)
    # a question's labels come from its first run: q2's run 1 says 256k / Chinese
    assert s["average_token_length_metric"] == pytest.approx({"8k": (q1 + q3) / 2, "256k": q2})
    assert list(s["average_language_metric"]) == ["Chinese", "English"]  # official key order
    # primary-task means are over questions, in T1..T11 order
    assert list(s["average_primary_task_metric"]) == ["T3. Evidence-Grounded QA", "T4. Summarization & Synthesis"]
    assert s["average_difficulty_metric"] == pytest.approx({"Easy": (q1 + q2) / 2, "Extreme": q3})


def test_best_of_n_and_pass_rates(rows):
    s = official_summary(rows, fail_samples_num=1, bon_num=3)
    assert s["BoN-1"]["overall_metric"] == pytest.approx((1.0 + 0.7 + 0.0) / 3)
    assert s["BoN-3"]["overall_metric"] == pytest.approx((1.0 + 0.7 + 0.5) / 3)
    # pass: exactly 1.0, or strictly above 0.65 where 'T4' is in the primary task
    assert s["pass@1"] == pytest.approx(2 / 3) and s["pass@3"] == pytest.approx(2 / 3)
    assert pass_rate([row("t", 1, 0.65, **T4)]) == 0.0 and pass_rate([row("t", 1, 0.99)]) == 0.0


def test_best_of_n_tie_keeps_the_first_row_seen():
    tied = [row("q", 1, 0.5, length="8k"), row("q", 2, 0.5, length="16k")]
    assert best_of_n(tied, 2)[0]["token_length"] == "8k"


def test_inconsistent_run_counts_and_default_bon(rows):
    result = summarize_rows(rows[:-1])  # q3 lost its third run
    assert result["summary"]["inference_iterations"] == 3
    assert result["summary"]["inference_inconsistent_samples_num"] == 1
    assert result["summary"]["fail_samples_num"] == 1
    extra = result["extra"]
    assert extra["average_secondary_task_metric"]["T3.2 Single-Hop Fact QA"] == pytest.approx((2 / 3 + 0.25) / 2)
    assert extra["counts"]["difficulty"]["Extreme"] == {"questions": 1, "questions_with_failures": 1}
