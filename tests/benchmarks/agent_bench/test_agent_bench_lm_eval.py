"""lm-eval's conventions on agent_bench: a fractional --limit (each config and length's share,
rounded up; n-samples filled) and standard errors next to the means."""

import math
import statistics

import pytest
from agent_bench_helpers import HashedContextBackend, OracleBackend, RightOnSomeSequences

from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, load_split, run_agent_bench
from jaxeval.benchmarks.agent_bench.rules import _cell
from jaxeval.benchmarks.registry import run_tasks
from jaxeval.run.lm_eval_view import lm_eval_view


def test_fraction_of_each_split_and_original_counts(tokenizer):
    total = len(load_split(SHIPPED_DATA, "facts", "8k"))
    assert total == 4
    result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, lengths=("8k",), limit=0.6)  # ceil(2.4)
    summary = run_tasks()["agent_bench"].summarize("agent_bench", result)
    assert summary["n-samples"]["agent_bench/facts/8k"] == {"original": 4, "effective": 3}
    assert len(result["sample_log"]) == 3


def _se(values):
    return statistics.stdev(values) / math.sqrt(len(values))


def test_facts_stderrs_are_the_sample_std_over_sqrt_n_of_the_queries(tokenizer):
    items = load_split(SHIPPED_DATA, "facts", "8k")
    right_on = {tuple(tokenizer(items[i].text)["input_ids"][:64]) for i in (0, 3)}
    result = run_agent_bench(RightOnSomeSequences(right_on), tokenizer, SHIPPED_DATA, lengths=("8k",))
    queries = [q for sample in result["sample_log"] for q in sample["queries"] if q["aligned"]]
    recalled = [float(q["recalled"]) for q in queries]
    assert 0 < sum(recalled) < len(recalled)
    metrics = result["sets"]["facts"]["8k"]
    assert metrics["query_accuracy_stderr"] == pytest.approx(_se(recalled))
    summary = run_tasks()["agent_bench"].summarize("agent_bench", result)
    leaf = summary["results"]["agent_bench/facts/8k"]
    assert leaf["query_accuracy_stderr"] == metrics["query_accuracy_stderr"]
    assert "query_accuracy_stderr" not in summary["higher_is_better"]["agent_bench/facts/8k"]
    view = lm_eval_view(summary["results"])["agent_bench/facts/8k"]
    assert view["query_accuracy_stderr,none"] == pytest.approx(_se(recalled))
    assert view["token_accuracy_stderr,none"] == "N/A"  # a ratio of token sums: no per-item mean
    logprobs = run_agent_bench(HashedContextBackend(), tokenizer, SHIPPED_DATA, lengths=("8k",))
    values = [q["logprob"] for s in logprobs["sample_log"] for q in s["queries"] if q["aligned"]]
    assert logprobs["sets"]["facts"]["8k"]["mean_logprob_stderr"] == pytest.approx(_se(values))


def test_rules_cell_stderrs_by_hand():
    targets = [{"scores": (0.0, s), "reference": (0.0, r)} for s, r in
               [(2.0, 4.0), (1.0, 4.0), (-3.0, -2.0), (5.0, 0.5), (1.0, -1.0)]]
    cell = _cell(targets, "system", "all")  # counted: 4; followed 1, 0, 1, 0; effects 2, 1, -3, 1
    assert cell["follow_stderr"] == pytest.approx(_se([1, 0, 1, 0]))
    assert cell["eff_stderr"] == pytest.approx(_se([2, 1, -3, 1]))
    assert _cell(targets[:1], "user", "all")["follow_stderr"] is None  # one target: none


def test_sample_rows_hold_the_text_read_and_the_targets(tokenizer):
    import hashlib

    items = load_split(SHIPPED_DATA, "facts", "8k")
    for log_prompts in (False, True):
        result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, sets=("facts", "rules_en"), lengths=("8k",),
                                 limit=1, log_prompts=log_prompts)
        facts = next(row for row in result["sample_log"] if row["config"] == "facts")
        assert facts["prompt_sha256"] == hashlib.sha256(items[0].text.encode()).hexdigest()
        assert facts["prompt_tokens"] == facts["tokens_read"] and facts["target"] == [t.answer for t in items[0].targets]
        assert facts.get("prompt") == (items[0].text if log_prompts else None)
        rules = next(row for row in result["sample_log"] if row["config"] == "rules_en")
        assert len(rules["prompt_sha256"]) == 64 and rules["prompt_tokens"] > 0
        assert rules["prompt_without_rule_sha256"] != rules["prompt_sha256"]
        assert ("prompt" in rules) is log_prompts
