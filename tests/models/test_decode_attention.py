"""decode_attention_rows: the rows share one key-block loop yet each row attends exactly as it would alone."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxeval.models.decode_attention import decode_attention, decode_attention_rows


def _cache(rng, layers, rows, kv, slots, hd):
    return jnp.asarray(rng.standard_normal((layers, rows, kv, slots, hd)), jnp.float32)


@pytest.mark.parametrize("window", [0, 40])
def test_rows_at_different_positions_match_each_row_alone(window):
    rng = np.random.default_rng(0)
    layers, rows, heads, kv, slots, hd = 2, 4, 4, 2, 256, 8
    k, v = _cache(rng, layers, rows, kv, slots, hd), _cache(rng, layers, rows, kv, slots, hd)
    q = jnp.asarray(rng.standard_normal((rows, heads, hd)), jnp.float32)
    positions = jnp.asarray([3, 70, 130, 255], jnp.int32)  # blocks of 32: rows see 1 to 8 blocks
    new_k, new_v = (jnp.asarray(rng.standard_normal((rows, kv, hd)), jnp.float32) for _ in range(2))
    got = decode_attention_rows(q, k, v, 1, positions, jnp.int32(window), 0.3, block_k=32, layers_first=True,
                                new_kv=(new_k, new_v, positions))
    for r in range(rows):
        p = int(positions[r])
        # the row alone, its new K/V written into its cache first, in the [L, S, KV, hd] layout of one row
        row_k, row_v = (jnp.swapaxes(c[:, r], 1, 2).at[1, p].set(n[r]) for c, n in ((k, new_k), (v, new_v)))
        want = decode_attention(q[r], row_k, row_v, 1, p, jnp.int32(window), 0.3, block_k=32)
        np.testing.assert_allclose(got[r], want, rtol=1e-5, atol=1e-6)


def test_a_row_ignores_the_stale_key_at_its_slot():
    """What the cache holds at the new key's slot never counts: only the new key does."""
    rng = np.random.default_rng(1)
    k, v = _cache(rng, 1, 2, 1, 64, 4), _cache(rng, 1, 2, 1, 64, 4)
    q = jnp.asarray(rng.standard_normal((2, 2, 4)), jnp.float32)
    positions = jnp.asarray([10, 40], jnp.int32)
    new = (jnp.ones((2, 1, 4)), jnp.ones((2, 1, 4)), positions)
    run = jax.jit(lambda k, v: decode_attention_rows(q, k, v, 0, positions, jnp.int32(0), 0.5, block_k=16,
                                                     layers_first=True, new_kv=new))
    stale = k.at[0, 0, 0, 10].set(100.0).at[0, 1, 0, 40].set(-100.0)  # each row's own slot
    np.testing.assert_array_equal(run(k, v), run(stale, v.at[0, 1, 0, 40].set(7.0)))
