"""facts / tool_calls / rules read several texts per step (read_many's batch_size): the scores of one read at a
time, and a batch cut short leaves none of its items in the journal."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from flax import nnx

from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, run_agent_bench
from jaxeval.benchmarks.agent_bench.data import load_split
from jaxeval.benchmarks.agent_bench.runner import item_key, read_items
from jaxeval.engine.backend import LanguageModel
from jaxeval.engine.prefix_reuse import read_many
from jaxeval.engine.runtime import Runtime
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder
from jaxeval.run.journal import Journal


class TinyBatchingModel(LanguageModel):
    """A one-layer random model over the embedded tokenizer's vocabulary; counts the sequences read one
    per step (reads) and the calls batching several (batches: their sizes)."""

    def __init__(self, fail_on_batch: int | None = None):
        raw = dict(model_type="llama", vocab_size=4096, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16384, rope_theta=10000.0)
        self.config = config_from_hf(raw)
        self.params = Decoder(self.config, rngs=nnx.Rngs(0)).params()
        self.reads, self.batches, self.fail_on_batch, self.tokenizer = 0, [], fail_on_batch, None

    def read_many(self, requests, *, batch_size=1, share_prefixes=True):
        requests = list(requests)
        if batch_size == 1:
            self.reads += len(requests)
        else:
            if self.fail_on_batch is not None and len(self.batches) == self.fail_on_batch:
                raise KeyboardInterrupt("preempted in the middle of a batch")
            self.batches.append(len(requests))
        return read_many(self.params, self.config, Runtime(prefill_chunk=1024, dtype="float32"), requests,
                         batch_size=batch_size, share_prefixes=share_prefixes)


def _floats_close(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _floats_close(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _floats_close(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, abs=1e-5)
    else:
        assert a == b


def test_batched_reads_score_as_one_at_a_time(tokenizer):
    kwargs = dict(sets=("facts", "tool_calls"), lengths=("8k",), limit=2)
    one = TinyBatchingModel()
    alone = run_agent_bench(one, tokenizer, SHIPPED_DATA, **kwargs)
    many = TinyBatchingModel()
    batched = run_agent_bench(many, tokenizer, SHIPPED_DATA, batch_size=4, **kwargs)
    assert one.batches == [] and one.reads >= 3  # one read per item with an aligned target
    assert many.reads == 0 and len(many.batches) == 2 and sum(many.batches) == one.reads  # a split per call
    _floats_close(alone["sets"], batched["sets"])
    assert alone["rows"] == batched["rows"]


def test_an_interrupted_batch_journals_none_of_its_items(tokenizer, tmp_path):
    items = load_split(SHIPPED_DATA, "facts", "8k")[:4]
    assert len(items) == 4
    path = str(tmp_path / "journal.jsonl")
    identity = {"run": "batched"}
    broken = TinyBatchingModel(fail_on_batch=1)  # the second batch of two never finishes
    with Journal(path, identity, flush_every=1) as journal, pytest.raises(KeyboardInterrupt):
        read_items(broken, tokenizer, "facts", "8k", items, "auto", journal, batch_size=2)
    with Journal(path, identity) as journal:
        done = [item.id for item in items if item_key("facts", "8k", item.id) in journal]
        assert done == [items[0].id, items[1].id]
        resumed_model = TinyBatchingModel()
        resumed = read_items(resumed_model, tokenizer, "facts", "8k", items, "auto", journal, batch_size=2)
    assert resumed_model.batches == [2]  # only the batch that was cut short runs again
    fresh = read_items(TinyBatchingModel(), tokenizer, "facts", "8k", items, "auto", None, batch_size=1)
    _floats_close([dataclasses.asdict(o) for o in fresh], [dataclasses.asdict(o) for o in resumed])
    assert np.isfinite([q.logprob for o in resumed for q in o.queries]).all()
