"""The framework's sample loop (jaxeval/benchmarks/loop.py): --limit per group, bucket order with
records back in the group's order, one generate call per options in a batch, reads, no request,
a follow-up request (Then), the journal's resume and its fixed batches."""

from __future__ import annotations

import types

import numpy as np
import pytest

from jaxeval.benchmarks.base import RunContext
from jaxeval.benchmarks.loop import Generate, Group, Read, Sample, Task, Then, read_rows, run_groups, run_task
from jaxeval.generation import GenerationOptions


class Tokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return ",".join(map(str, ids))


class Model:
    """generate answers each prompt with its length; read answers log-prob -position."""

    def __init__(self):
        self.tokenizer, self.calls = Tokenizer(), []

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):
        self.calls.append(("generate", [len(p) for p in prompts], max_new_tokens, seed, batch_size))
        return [types.SimpleNamespace(tokens=[len(p), seed]) for p in prompts]

    def read_many(self, requests, *, batch_size=1, share_prefixes=True):  # the model contract's read entry
        results = []
        for ids, positions, tokens in requests:
            self.calls.append(("read", len(ids)))
            results.append(types.SimpleNamespace(logprobs=-np.asarray(positions, dtype=float), top1=np.asarray(tokens)))
        return types.SimpleNamespace(results=results)


class Lengths(Task):
    """Sample i asks for a prompt of lengths[i] tokens; odd lengths are read, length 0 asks nothing,
    a length of 102 asks again (Then) with seed 1."""

    def __init__(self, groups):
        self._groups, self.requested = groups, []

    def groups(self):
        return self._groups

    def request(self, sample):
        self.requested.append(sample.key)
        n = sample.item
        if n == 0:
            return None
        if n % 2:
            return Read(list(range(n)), [n - 1], [0])
        return Generate([7] * n, GenerationOptions(4, seed=0))

    def score(self, sample, output):
        if output is None:
            return {"nothing": True}
        if not hasattr(output, "text"):
            return {"logprob": float(output.logprobs[0])}
        if sample.item == 102 and output.text.endswith(",0"):
            return Then(Generate([1, 2], GenerationOptions(4, seed=1)), lambda again: {"second": again.text})
        return {"text": output.text}

    def summarize(self, done):
        return {"records": [d.records for d in done], "totals": [d.total for d in done]}, ""


def test_limit_order_batching_and_records_in_the_groups_order():
    model = Model()
    task = Lengths([Group("a", [Sample(f"a/{i}", n) for i, n in enumerate([2, 6, 4, 3, 0, 8])]),
                    Group("b", [Sample("b/0", 102), Sample("b/1", 10)], limit=False)])
    result, _ = run_task(RunContext("t", model, limit=5, batch_size=8), task)
    assert result["totals"] == [6, 2]
    assert result["records"][0] == [{"text": "2,0"}, {"text": "6,0"}, {"text": "4,0"}, {"logprob": -2.0},
                                    {"nothing": True}]  # the first 5; the sixth never asked
    assert result["records"][1] == [{"second": "2,1"}, {"text": "10,0"}]
    assert model.calls == [("generate", [2, 6, 4], 4, 0, 8), ("read", 3),  # equal options: one call
                           ("generate", [102, 10], 4, 0, 8), ("generate", [2], 4, 1, 8)]  # then the follow-up


def test_bucketed_groups_go_longest_bucket_first_and_come_back_in_order():
    model = Model()
    lengths = [10, 5000, 20, 3000]
    task = Lengths([Group("a", [Sample(f"a/{i}", n) for i, n in enumerate(lengths)], bucketed=True)])
    result, _ = run_task(RunContext("t", model, batch_size=2), task)
    assert [call[1] for call in model.calls] == [[5000, 3000], [20, 10]]  # each bucket longest first
    assert result["records"][0] == [{"text": f"{n},0"} for n in lengths]


def test_resume_computes_only_the_batches_not_in_the_journal():
    class Journal(dict):
        def get(self, key):
            return super().get(key)

        def put(self, key, record):
            self[key] = record

    journal = Journal({"a/0": {"text": "journaled"}, "a/1": {"text": "journaled"}})
    model, samples = Model(), [Sample(f"a/{i}", 2 * (i + 1)) for i in range(4)]
    task = Lengths([Group("a", samples)])
    (done,) = run_groups(RunContext("t", model, journal=journal, batch_size=2), task, task.groups())
    assert done.records[:2] == [{"text": "journaled"}] * 2 and done.records[2:] == [{"text": "6,0"}, {"text": "8,0"}]
    assert task.requested == ["a/2", "a/3"] and model.calls == [("generate", [6, 8], 4, 0, 2)]
    assert journal["a/3"] == {"text": "8,0"}


def test_an_empty_group_asks_nothing_and_a_bad_request_is_named():
    model = Model()
    (done,) = run_groups(RunContext("t", model), Lengths([]), [Group("empty", [])])
    assert done.records == [] and model.calls == []

    class Bad(Lengths):
        def request(self, sample):
            return "a prompt"

    with pytest.raises(TypeError, match="Generate, Read or None, got str"):
        run_groups(RunContext("t", model), Bad([]), [Group("a", [Sample("a/0", 1)])])


def test_reads_per_step_one_on_cpu_unless_given():
    assert read_rows(RunContext("t", None, batch_size=8)) == 1  # the tests run on CPU
    assert read_rows(RunContext("t", None, batch_size=8, read_rows=4)) == 4
