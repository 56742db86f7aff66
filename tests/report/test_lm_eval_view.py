"""results_lm_eval: lm-eval's "<metric>,none" keys and standard errors beside the means."""

import math

from jaxeval.benchmarks.longbench.benchmark import BENCHMARK
from jaxeval.run.lm_eval_view import lm_eval_view, stderr


def test_stderr_is_the_standard_error_of_the_mean():
    assert math.isclose(stderr([0, 1, 1, 0]), math.sqrt(1 / 3 / 4))  # sample std 0.577 / sqrt(4)
    assert math.isclose(stderr([0.0, 1.0], 100.0), 50.0)
    assert stderr([1.0]) is None and stderr([]) is None


def test_view_keys_read_as_metric_comma_filter():
    view = lm_eval_view({"longbench/qasper": {"score": 41.5, "score_stderr": 3.2},
                         "agent_bench/facts/8k": {"query_accuracy": 0.5, "mode": "text"}})
    assert view["longbench/qasper"] == {"alias": "longbench/qasper", "score,none": 41.5, "score_stderr,none": 3.2}
    assert view["agent_bench/facts/8k"] == {"alias": "agent_bench/facts/8k", "query_accuracy,none": 0.5,
                                            "query_accuracy_stderr,none": "N/A"}


def test_longbench_summary_has_stderr_next_to_the_score():
    result = {"scores": {"qasper": 50.0}, "samples": {"qasper": 4}, "sample_scores": {"qasper": [0.0, 1.0, 1.0, 0.0]},
              "categories": {}, "scoring": {}, "prompting": {"limit": None, "data": "x", "max_length": 10,
                                                            "max_length_source": "given", "truncated": {},
                                                            "chat_format": "raw", "chat_template_skipped_for": []},
              "outputs": {"qasper": []}}
    summary = BENCHMARK.summarize("longbench", result)
    assert summary["results"]["longbench/qasper"]["score"] == 50.0
    assert math.isclose(summary["results"]["longbench/qasper"]["score_stderr"], 100 * math.sqrt(1 / 3 / 4))
