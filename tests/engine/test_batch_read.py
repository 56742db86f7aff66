"""Batched reads (read_many's batch_size, jaxeval.engine.batch_read) against one read() per sequence,
and their compile count."""

import numpy as np
import pytest

from jaxeval.engine.batch_read import read_batches
from jaxeval.engine.prefix_reuse import read_many
from jaxeval.engine.read import prefill_chunk, read
from jaxeval.engine.runtime import Runtime
from tests.engine.test_read import tiny


def requests_of(config, lengths, seed=0):
    """(ids, positions, tokens) per length: a few positions each, some with candidate tokens."""
    rng = np.random.RandomState(seed)
    out = []
    for n, length in enumerate(lengths):
        ids = rng.randint(0, config.vocab_size, size=length)
        positions = np.sort(rng.choice(np.arange(1, length), size=min(length - 1, 3 + n % 5), replace=False))
        tokens = ids[positions] if n % 3 else rng.randint(0, config.vocab_size, size=(positions.size, 2))
        out.append((ids, positions, tokens))
    return out


@pytest.mark.parametrize("model", ["llama", "gemma2"])
def test_batched_reads_equal_separate_reads(model):
    extra = dict(head_dim=8, sliding_window=100, query_pre_attn_scalar=16, attn_logit_softcapping=20.0) \
        if model == "gemma2" else {}
    config, params = tiny(model, **extra)
    # two rungs (256, 512), a batch of 3 padded to 4 rows, one of 2, a single
    requests = requests_of(config, [40, 250, 130, 300, 480, 20, 256])
    batched = read_many(params, config, Runtime(prefill_chunk=128, dtype="float32"), requests, batch_size=4,
                        share_prefixes=False).results
    assert len(batched) == len(requests)
    for (ids, positions, tokens), got in zip(requests, batched):
        alone = read(params, config, Runtime(prefill_chunk=128, dtype="float32"), ids, positions, tokens)
        assert got.logprobs.shape == alone.logprobs.shape
        np.testing.assert_array_equal(got.top1, alone.top1)
        assert np.max(np.abs(got.logprobs - alone.logprobs)) <= 1e-5


def test_batches_keep_to_one_rung_and_the_batch_size():
    config, _ = tiny()
    requests = requests_of(config, [40, 250, 130, 300, 480, 20, 256, 600])
    _, batches = read_batches(config, requests, batch_size=2)
    from jaxeval.engine.buckets import length_bucket

    assert sorted(r.index for b in batches for r in b) == list(range(len(requests)))
    assert all(len(b) <= 2 and len({length_bucket(r.n_inputs) for r in b}) == 1 for b in batches)
    with pytest.raises(ValueError, match="batch_size"):
        read_batches(config, requests, batch_size=0)


def test_one_trunk_compile_per_bucket_and_batch_rows():
    """Eight sequences of one rung, each with another number of read positions: one trunk executable."""
    config, params = tiny(num_hidden_layers=3)
    rng = np.random.RandomState(4)
    requests = []
    for n, length in enumerate((700, 720, 750, 800, 850, 900, 950, 1000)):  # all on the 1,024 rung
        ids = rng.randint(0, config.vocab_size, size=length)
        positions = np.arange(1, 2 + 5 * n)  # 1 .. 36 positions: 8, 16, 32, 64 padded rows
        requests.append((ids, positions, ids[positions]))
    before = prefill_chunk._cache_size()
    runtime = Runtime(prefill_chunk=256, dtype="float32")
    read_many(params, config, runtime, requests, batch_size=8, share_prefixes=False)
    assert prefill_chunk._cache_size() - before == 1
    for ids, positions, tokens in requests[:3]:  # separate reads: the one-row executable, once
        read(params, config, runtime, ids, positions, tokens)
    assert prefill_chunk._cache_size() - before == 2
