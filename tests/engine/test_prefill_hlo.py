"""A read's prefill chunk writes its K/V into the stacked cache once, in place, and attention reads it there.

Read from the optimized HLO of prefill_chunk (the last 512-token chunk of a 4,096-slot cache) for the
exact and the int8 cache and for a hybrid's K/V, with the chunked backend: every instruction whose
result spans the cache's 4,096 slots must be a parameter, a tuple element, a bitcast or an in-place
dynamic-update-slice (test_decode_hlo.whole_cache_ops). Scanning the layers over the cache sliced each
layer out (a dynamic-slice and a copy of [1, S, KV, hd]: 16 MB per layer and chunk at 32k keys for the
57M Llama) and dequantized an int8 layer whole; each fails here. A backend that needs the layer
contiguous (xla) gets one copy of it, never of the whole cache.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest

from jaxeval.engine.read import new_read_cache, prefill_chunk, prefill_hybrid_chunk
from jaxeval.engine.runtime import Runtime
from jaxeval.models.kv_policy import KVPolicy
from jaxeval.models.rope import RopeTables, rope_tables
from test_decode_hlo import whole_cache_ops
from test_generate import tiny

SLOTS, CHUNK = 4096, 512


def _shapes(cache):
    return [leaf.shape for leaf in jax.tree.leaves(cache)]


def _bytes_held(ops):
    """The ops that hold data: latent attention's value cache is empty ([..., 0]: a constant, copied freely)."""
    return [op for op in ops if not re.match(r"%\S+ = \w+\[[\d,]*,0\]", op)]


def _args(config, runtime):
    cache = new_read_cache(config, runtime, SLOTS, 1)
    rope = RopeTables(*(jnp.asarray(t) for t in rope_tables(config, SLOTS)))
    return cache, jnp.zeros((1, CHUNK), jnp.int32), jnp.int32(SLOTS - CHUNK), rope


def _prefill_hlo(config, params, runtime):
    cache, ids, start, rope = _args(config, runtime)
    hlo = prefill_chunk.lower(params, *cache, ids, start, rope, config=config, runtime=runtime).compile().as_text()
    return hlo, cache


@pytest.mark.parametrize("policy", [None, KVPolicy("int8")], ids=["exact", "int8"])
def test_prefill_chunk_reads_the_cache_in_place(policy):
    config, params = tiny(num_hidden_layers=3, max_position_embeddings=2 * SLOTS)
    hlo, cache = _prefill_hlo(config, params, Runtime(attention="chunked", prefill_chunk=CHUNK, dtype="float32",
                                                      kv_cache=policy))
    assert whole_cache_ops(hlo, _shapes(cache)) == []


def test_a_two_stack_model_reads_the_cache_in_place():
    """DeepSeek-style dense layers before the MoE ones: two scans, one cache carried through both."""
    config, params = tiny("deepseek_v3", num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=4,
                          num_experts_per_tok=2, n_group=1, topk_group=1, n_shared_experts=1, moe_intermediate_size=16,
                          num_key_value_heads=4, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8,
                          qk_nope_head_dim=8, v_head_dim=8, max_position_embeddings=2 * SLOTS)
    hlo, cache = _prefill_hlo(config, params, Runtime(attention="chunked", prefill_chunk=CHUNK, dtype="float32"))
    assert _bytes_held(whole_cache_ops(hlo, _shapes(cache))) == []


def test_a_contiguous_backend_copies_one_layer_not_the_cache():
    """xla attention takes the layer as one array: the copies are [B, S, KV, hd], never [L, B, S, KV, hd]."""
    config, params = tiny(num_hidden_layers=3, max_position_embeddings=2 * SLOTS)
    hlo, cache = _prefill_hlo(config, params, Runtime(attention="xla", prefill_chunk=CHUNK, dtype="float32"))
    assert whole_cache_ops(hlo, _shapes(cache), slots=None) == []


def test_hybrid_prefill_chunk_reads_the_cache_in_place():
    config, params = tiny("qwen3_5_text", num_hidden_layers=4, head_dim=8, linear_num_key_heads=2,
                          linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                          linear_conv_kernel_dim=4, layer_types=["linear_attention", "full_attention"] * 2,
                          max_position_embeddings=2 * SLOTS)
    runtime = Runtime(attention="chunked", prefill_chunk=CHUNK, dtype="float32")
    cache, ids, start, rope = _args(config, runtime)
    hlo = prefill_hybrid_chunk.lower(params, cache, ids, start, rope, config=config,
                                     runtime=runtime).compile().as_text()
    assert whole_cache_ops(hlo, _shapes((cache.k, cache.v))) == []
