"""A fractional --limit on agent_bench: each config and length's share, rounded up; n-samples filled."""

from agent_bench_helpers import OracleBackend

from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, load_split, run_agent_bench
from jaxeval.benchmarks.registry import run_tasks


def test_fraction_of_each_split_and_original_counts(tokenizer):
    total = len(load_split(SHIPPED_DATA, "facts", "8k"))
    assert total == 4
    result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, lengths=("8k",), limit=0.6)  # ceil(2.4)
    summary = run_tasks()["agent_bench"].summarize("agent_bench", result)
    assert summary["n-samples"]["agent_bench/facts/8k"] == {"original": 4, "effective": 3}
    assert len(result["sample_log"]) == 3
