"""A fractional --limit on LongBench / LongBench-E: each dataset's share, rounded up; n-samples filled."""

from longbench_helpers import EchoBackend

from jaxeval.benchmarks.longbench import run_longbench
from jaxeval.benchmarks.longbench.tasks import SHIPPED_SAMPLE
from jaxeval.benchmarks.registry import run_tasks


def test_fraction_of_each_dataset_and_original_counts(tokenizer):
    result = run_longbench(EchoBackend(tokenizer, "a"), tokenizer, SHIPPED_SAMPLE, datasets=["trec", "lcc"],
                           limit=0.4, max_length=300)  # 3 records each: ceil(1.2) = 2
    assert {name: len(rows) for name, rows in result["outputs"].items()} == {"trec": 2, "lcc": 2}
    summary = run_tasks()["longbench"].summarize("longbench", result)
    assert summary["n-samples"]["longbench/trec"] == {"original": 3, "effective": 2}
    assert summary["configs"]["limit"] == 0.4
    full = run_longbench(EchoBackend(tokenizer, "a"), tokenizer, SHIPPED_SAMPLE, datasets=["trec"], e=True, limit=1,
                         max_length=300)
    assert run_tasks()["longbench_e"].summarize("longbench_e", full)["n-samples"]["longbench_e/trec"] == \
        {"original": 3, "effective": 1}


def test_gen_kwargs_replace_the_per_dataset_budget_and_stops(tokenizer):
    from jaxeval.generation import GenKwargs, overriding

    own = EchoBackend(tokenizer, "a")
    run_longbench(own, tokenizer, SHIPPED_SAMPLE, datasets=["trec"], limit=1, max_length=300)
    assert own.calls[0]["max_new_tokens"] == 64 and own.calls[0]["stop"] is None  # trec's own budget
    backend = EchoBackend(tokenizer, "a")
    with overriding(GenKwargs(max_new_tokens=3, until=("\n",))) as state:
        run_longbench(backend, tokenizer, SHIPPED_SAMPLE, datasets=["trec"], limit=1, max_length=300)
    assert [(c["max_new_tokens"], c["stop"]) for c in backend.calls] == [(3, ["\n"])] and state.calls == 1


def test_sample_rows_hold_the_prompt_hash_length_target_and_raw_output(tokenizer):
    import hashlib

    from jaxeval.benchmarks.base import RunContext
    from jaxeval.benchmarks.longbench.benchmark import LongBenchSettings

    benchmark = run_tasks()["longbench"]
    backend = EchoBackend(tokenizer, "a b")
    backend.config = type("Config", (), {"max_position_embeddings": 800})()
    backend.tokenizer = tokenizer
    for log_prompts in (False, True):
        result, _ = benchmark.run(RunContext("longbench", backend, limit=1, log_prompts=log_prompts),
                                  LongBenchSettings())
        row = result["sample_log"][0]
        ids = backend.calls[-len(result["sample_log"])]["prompts"][0]  # the first dataset's first prompt
        prompt = tokenizer.decode(ids, skip_special_tokens=False)
        assert row["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest() and row["prompt_tokens"] == len(ids)
        assert row["raw_output"] == "a b" and row["target"] and isinstance(row["target"], list)
        assert ("prompt" in row) is log_prompts and (row.get("prompt") in (None, prompt))
        assert not any("prompt" in output for outputs in result["outputs"].values() for output in outputs)
