"""Scores by distance (facts and tool_calls `by_distance`): fixed ladder, nearest first, counts."""

from jaxeval.benchmarks.agent_bench.distance import distance_bucket
from jaxeval.benchmarks.agent_bench.facts import ItemOutcome, QueryOutcome, facts_metrics
from jaxeval.benchmarks.agent_bench.tool_calls import ToolItemOutcome, ToolTargetOutcome, tool_calls_metrics


def test_distance_ladder_edges():
    assert [distance_bucket(d) for d in (0, 511, 512, 1023, 1024, 4095, 32767, 32768, 10 ** 6)] == [
        "0-512", "0-512", "512-1k", "512-1k", "1k-2k", "2k-4k", "16k-32k", "32k+", "32k+"]


def test_facts_by_distance_counts_unaligned_but_does_not_score_them():
    queries = (QueryOutcome("a", 0, aligned=True, recalled=True, distance_tokens=5000),
               QueryOutcome("a", 1, aligned=True, recalled=False, distance_tokens=100),
               QueryOutcome("a", 2, aligned=True, recalled=True, distance_tokens=200),
               QueryOutcome("a", 3, aligned=False, distance_tokens=4500))
    metrics = facts_metrics([ItemOutcome("a", "text", None, 8192, queries)])
    assert metrics["by_distance"] == {"0-512": {"query_accuracy": 0.5, "scored": 2, "targets": 2},
                                      "4k-8k": {"query_accuracy": 1.0, "scored": 1, "targets": 2}}
    assert list(metrics["by_distance"]) == ["0-512", "4k-8k"]  # nearest first, whatever the item order


def test_tool_calls_by_distance_is_null_where_nothing_was_scored():
    targets = (ToolTargetOutcome("name", far=True, fresh=False, aligned=False, distance_tokens=20000),
               ToolTargetOutcome("name", far=False, fresh=False, aligned=True, correct=True, distance_tokens=30))
    metrics = tool_calls_metrics([ToolItemOutcome("t", "text", None, 100, targets)])
    assert metrics["by_distance"] == {"0-512": {"accuracy": 1.0, "scored": 1, "targets": 1},
                                      "16k-32k": {"accuracy": None, "scored": 0, "targets": 1}}
