"""The chunked attention backend's compiled program reads K/V blocks from the cache as it is laid out."""

import jax
import jax.numpy as jnp

from jaxeval.models.attention import chunked_attention


def test_chunked_attention_never_transposes_the_whole_cache():
    """K/V [B, S, KV, hd] are sliced block by block; a [B, KV, S, hd] copy of the cache (16 MB per layer
    and chunk at 32k keys for the 57M Llama) must not appear in the optimized HLO."""
    q = jnp.zeros((1, 256, 8, 64), jnp.float32)
    k = jnp.zeros((1, 4096, 2, 64), jnp.float32)
    run = jax.jit(lambda q, k, v, start: chunked_attention(q, k, v, start, jnp.int32(0), 0.125))
    hlo = run.lower(q, k, k, jnp.int32(4096 - 256)).compile().as_text()
    assert "f32[1,4096,2,64]" in hlo  # the cache as passed
    assert "f32[1,2,4096,64]" not in hlo and "f32[2,4096,64]" not in hlo
