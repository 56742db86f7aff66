"""A fractional --limit on LongBench Pro: each primary task's share, rounded up; n-samples filled."""

from collections import Counter

import jaxeval.benchmarks.longbench_pro.runner as runner
from jaxeval.benchmarks.longbench_pro.data import load_records
from jaxeval.benchmarks.registry import run_tasks

from conftest import FakeSemSim, ScriptedBackend


def test_fraction_of_each_primary_task_and_original_counts(tiny_tokenizer, monkeypatch):
    records = load_records()
    per_task = Counter(r.primary_task for r in records)
    assert set(per_task.values()) == {3}
    chosen = runner.select_records(records, 0.4)  # ceil(1.2) = 2 of each
    assert Counter(r.primary_task for r in chosen) == {task: 2 for task in per_task}
    monkeypatch.setattr(runner, "load_semsim", lambda settings: (FakeSemSim(0.5), {"model": "fake"}))
    result = runner.run_longbench_pro(ScriptedBackend(tiny_tokenizer, lambda p, s: "[Answer]\nA"), runs=1,
                                      limit=0.1, truncation_length=100_000, max_new_tokens=8)
    summary = run_tasks()["longbench_pro"].summarize("longbench_pro", result)
    assert summary["n-samples"]["longbench_pro"] == {"original": len(records), "effective": len(per_task)}
