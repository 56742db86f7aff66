"""Reads that share token prefixes: the same results as separate reads, fewer tokens run."""

import numpy as np

from jaxeval.engine.prefix_reuse import planned_segments, read_many
from jaxeval.engine.read import read
from jaxeval.engine.runtime import Runtime
from test_read import tiny

CHUNK = 64
RUNTIME = Runtime(prefill_chunk=CHUNK, dtype="float32")


def _requests(config):
    rng = np.random.RandomState(3)
    base = rng.randint(0, config.vocab_size, size=600)
    with_rule = np.concatenate([base[:200], rng.randint(0, config.vocab_size, size=7), base[200:]])
    other_rule = np.concatenate([base[:330], rng.randint(0, config.vocab_size, size=5), base[330:]])
    unrelated = rng.randint(0, config.vocab_size, size=300)
    early = base.copy()  # reads before its first whole chunk: shares nothing
    return [
        (base, np.array([400, 590, 599]), base[[400, 590, 599]]),
        (with_rule, np.array([450, 600]), with_rule[[450, 600]]),
        (other_rule, np.array([520, 521]), np.stack([other_rule[[520, 521]], base[[1, 2]]], axis=1)),
        (unrelated, np.array([100, 299]), unrelated[[100, 299]]),
        (early, np.array([10, 300]), early[[10, 300]]),
    ]


def read_as_separately(params, config, runtime, requests):
    """read_many's SharedReads, each result checked bit-identical to its separate read()."""
    shared = read_many(params, config, runtime, requests)
    for (ids, positions, tokens), result in zip(requests, shared.results):
        alone = read(params, config, runtime, ids, positions, tokens)
        np.testing.assert_array_equal(result.top1, alone.top1)
        np.testing.assert_array_equal(result.logprobs, alone.logprobs)
        assert result.logprobs.shape == alone.logprobs.shape
    return shared


def test_shared_prefix_reads_equal_separate_reads():
    config, params = tiny()
    requests = _requests(config)
    # same chunk, the group's bucket (1024 for the three sharing ones) or their own for the rest: exact
    shared = read_as_separately(params, config, RUNTIME, requests)
    naive = sum(int(positions.max()) for _, positions, _ in requests)
    assert shared.tokens_naive == naive
    # base, with_rule and other_rule share 3 chunks (192 tokens); base and other_rule 5 (320)
    assert shared.prefixes == 2
    assert shared.tokens_run == naive - 2 * 192 - 128
    # `jaxeval plan` counts the same work without running it (every read row once, prefixes once)
    segments = planned_segments(config, requests, CHUNK)
    assert sum(end - first for first, end, _ in segments) == shared.tokens_run
    assert sum(rows for _, _, rows in segments) == sum(len(positions) for _, positions, _ in requests)


def test_prefix_sharing_and_batching_are_options_of_one_entry():
    """share_prefixes=False reads each request from scratch, batch_size rows per step: the same results,
    every token run; the plan counts it the same way."""
    config, params = tiny()
    requests = _requests(config)
    shared = read_many(params, config, RUNTIME, requests)
    for batch_size in (1, 4):
        alone = read_many(params, config, RUNTIME, requests, batch_size=batch_size, share_prefixes=False)
        assert alone.prefixes == 0 and alone.tokens_run == alone.tokens_naive == shared.tokens_naive
        for a, b in zip(alone.results, shared.results):
            np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
            assert a.logprobs.shape == b.logprobs.shape
    segments = planned_segments(config, requests, CHUNK, share_prefixes=False)
    assert sum(end - first for first, end, _ in segments) == shared.tokens_naive



def test_length_dependent_rope_shares_prefixes_only_between_equal_tables():
    """Dynamic NTK's frequencies depend on each sequence's length: a prefix computed for one length is not
    reused for a length with other tables (past max_position_embeddings), and every result still equals its
    separate read; two lengths below the threshold have the same tables and do share."""
    config, params = tiny(max_position_embeddings=400, rope_scaling={"rope_type": "dynamic", "factor": 4.0})
    rng = np.random.RandomState(5)
    base = rng.randint(0, config.vocab_size, size=700)
    requests = [(base[:n], np.array([n - 20, n - 1]), base[[n - 20, n - 1]]) for n in (300, 350, 500, 650)]
    shared = read_many(params, config, RUNTIME, requests)
    for (ids, positions, tokens), result in zip(requests, shared.results):
        alone = read(params, config, RUNTIME, ids, positions, tokens)
        np.testing.assert_array_equal(result.logprobs, alone.logprobs)
    assert shared.prefixes == 1  # 300 and 350 (both below 400: the original frequencies); 500, 650 alone
    far = read(params, config, RUNTIME, base[:650], np.array([280]), base[[280]]).logprobs
    near = read(params, config, RUNTIME, base[:300], np.array([280]), base[[280]]).logprobs
    assert abs(float(far[0] - near[0])) > 1e-4  # the same position reads differently in a longer sequence
