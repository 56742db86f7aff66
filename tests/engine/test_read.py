"""The chunked teacher-forced read against a full-logits reference, and its shape discipline."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxeval.engine.buckets import LENGTH_LADDER, chunk_size, count_bucket, length_bucket
from jaxeval.engine.read import prefill_chunk, read, read_head
from jaxeval.engine.runtime import Runtime
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder, forward_logits

F32 = Runtime(dtype="float32")


def tiny(model_type="llama", **extra):
    raw = dict(model_type=model_type, vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192, rope_theta=10000.0)
    config = config_from_hf(raw | extra)
    return config, Decoder(config, rngs=nnx.Rngs(1)).params()


def reference_logprobs(params, config, ids):
    logits = forward_logits(params, config, jnp.asarray(ids)[None])[0]
    return np.asarray(jax.nn.log_softmax(logits, axis=-1)), np.asarray(jnp.argmax(logits, -1))


def test_ladder_rounds_to_rungs_not_powers_of_two():
    assert length_bucket(32768) == 32768  # a 32,769-token text feeds 32,768 inputs
    assert length_bucket(32769) == 49152
    assert length_bucket(8193) == 12288
    assert length_bucket(1) == LENGTH_LADDER[0]
    assert length_bucket(300_000) == 327680
    assert count_bucket(1) == 8 and count_bucket(9) == 16 and count_bucket(64) == 64
    assert all(rung % chunk_size(rung, 2048) == 0 for rung in LENGTH_LADDER)
    assert chunk_size(12288, 2048) == 2048 and chunk_size(512, 2048) == 512


@pytest.mark.parametrize("backend", ["chunked", "xla"])
@pytest.mark.parametrize("chunk", [256, 1024])
def test_read_matches_full_logits_across_chunks(backend, chunk):
    config, params = tiny("gemma2", head_dim=8, sliding_window=200, query_pre_attn_scalar=16,
                          attn_logit_softcapping=20.0, final_logit_softcapping=15.0)
    ids = np.random.RandomState(0).randint(0, config.vocab_size, size=1500)
    ref, ref_top = reference_logprobs(params, config, ids)
    positions = np.array([1, 2, 255, 256, 257, 700, 1023, 1024, 1025, 1499])
    result = read(params, config, Runtime(backend, chunk, "float32"), ids, positions, ids[positions])
    np.testing.assert_allclose(result.logprobs, ref[positions - 1, ids[positions]], atol=2e-5)
    np.testing.assert_array_equal(result.top1, ref_top[positions - 1])


def test_candidate_tokens_and_repeated_positions():
    config, params = tiny()
    ids = np.random.RandomState(1).randint(0, config.vocab_size, size=300)
    ref, _ = reference_logprobs(params, config, ids)
    positions = np.array([5, 5, 299])
    candidates = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    result = read(params, config, F32, ids, positions, candidates)
    assert result.logprobs.shape == (3, 3)
    np.testing.assert_allclose(result.logprobs, ref[positions - 1][np.arange(3)[:, None], candidates], atol=2e-5)


def test_only_inputs_up_to_the_last_read_position_matter():
    config, params = tiny()
    ids = np.random.RandomState(2).randint(0, config.vocab_size, size=600)
    changed = ids.copy()
    changed[400:] = (changed[400:] + 1) % config.vocab_size  # after the last input used
    a = read(params, config, F32, ids, np.array([10, 400]), ids[[10, 400]])
    b = read(params, config, F32, changed, np.array([10, 400]), ids[[10, 400]])
    np.testing.assert_array_equal(a.logprobs, b.logprobs)


def test_one_compilation_per_bucket():
    config, params = tiny(num_hidden_layers=3)
    rng = np.random.RandomState(3)
    before = prefill_chunk._cache_size()
    for length in (700, 900, 1000):  # all on the 1,024 rung
        ids = rng.randint(0, config.vocab_size, size=length)
        read(params, config, Runtime(prefill_chunk=256, dtype="float32"), ids, np.array([length - 1]),
             ids[[length - 1]])
    assert prefill_chunk._cache_size() - before == 1


def test_head_never_builds_all_rows_of_logits():
    """The head projects head_rows() rows at a time (at most 1,024): its temporaries stay far below [K, vocab]."""
    config, params = tiny(vocab_size=4096)
    k = 16384
    compiled = read_head.lower(params, jnp.zeros((k, config.hidden_size)), jnp.zeros((k, 1), jnp.int32),
                               config=config, runtime=F32).compile()
    full_logits_bytes = k * config.vocab_size * 4
    analysis = compiled.memory_analysis()
    if analysis is None:
        pytest.skip("this backend reports no memory analysis")
    assert analysis.temp_size_in_bytes < full_logits_bytes / 8


def test_head_blocks_hold_at_least_128_rows():
    """Every head block reads the whole [hidden, vocab] weight: 128 rows at the least (Gemma 3's 262k
    vocabulary too), up to 32 MiB of logits above that, never more rows than are read."""
    from jaxeval.engine.read import head_rows

    assert head_rows(8192, 262144) == 128
    assert head_rows(8192, 32000) == 256
    assert head_rows(8192, 49152) == 128
    assert head_rows(64, 262144) == 64
