"""The batch decode step touches only the rows' new slots and the key blocks attention reads.

Read from the optimized HLO of a batch-8 step over a 4,096-slot cache, for each cache kind (exact,
int8 / fp8 codes and scales, the SnapKV mask over the full cache, the bounded streaming and SnapKV
caches with their slot positions, a hybrid's K/V): every instruction whose result spans the cache's
4,096 slots (a bounded cache, whose every slot attention reads: whose result has a cache array's
shape) must be a parameter, a tuple element, a bitcast or an in-place dynamic-update-slice (bare,
or the root of its fusion). A per-layer write of a vmapped row compiles to a scatter over
the whole cache, a reordered cache to a copy or transpose, a whole-layer read to a gather of 4,096
slots: each fails here.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxeval.engine import bounded_kv
from jaxeval.engine.decode_cache import new_batch
from jaxeval.engine.generate import cache_type
from jaxeval.engine.hybrid_generate import decode_hybrid_step
from jaxeval.engine.kv_cache import KVCache, QuantizedKVCache, decode_step
from jaxeval.engine.runtime import Runtime
from jaxeval.engine.sampling import prompt_keys
from jaxeval.engine.snapkv import SnapKVMaskCache
from jaxeval.models import hybrid
from jaxeval.models.kv_policy import KVPolicy, new_kv_cache
from jaxeval.models.rope import RopeTables, row_tables
from test_generate import tiny

ROWS, SLOTS = 8, 4096
ALLOWED = {"parameter", "get-tuple-element", "bitcast", "dynamic-update-slice", "tuple"}
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%\S+ = \w+\[([\d,]*)\]\S* ([\w-]+)\((.*)$")
_CALLS = re.compile(r"calls=(%[\w.-]+)")


def whole_cache_ops(hlo: str, shapes, slots: int | None = SLOTS) -> list[str]:
    """The instructions of an optimized HLO module that produce an array of one of the cache's shapes
    (or, with slots, any array spanning that many slots along an axis) and are not a parameter, a
    tuple element, a bitcast or an in-place update (dynamic-update-slice, or a fusion whose root is one)."""
    shapes = {",".join(map(str, s)) for s in shapes}
    roots, computation = {}, None
    for line in hlo.splitlines():
        if line and not line.startswith(" ") and "{" in line:
            computation = line.split()[0] if not line.startswith("ENTRY") else line.split()[1]
        elif line.strip().startswith("ROOT") and computation:
            m = _INSTRUCTION.match(line)
            roots[computation] = m.group(2) if m else None
    bad = []
    for line in hlo.splitlines():
        m = _INSTRUCTION.match(line)
        if not m or m.group(2) in ALLOWED:
            continue
        if m.group(1) not in shapes and (slots is None or str(slots) not in m.group(1).split(",")):
            continue
        called = _CALLS.search(line)
        if m.group(2) == "fusion" and called and roots.get(called.group(1)) == "dynamic-update-slice":
            continue
        bad.append(line.strip()[:200])
    return bad


def _shapes(cache):
    return [leaf.shape for leaf in jax.tree.leaves(cache)]


def _rope(config):
    return RopeTables(*(jnp.asarray(t) for t in row_tables(config, [SLOTS - 100] * ROWS)))


def _common(config):
    ints = jnp.full(ROWS, SLOTS - 101, jnp.int32)
    return ints, ints, prompt_keys(np.uint32(0), jnp.arange(ROWS, dtype=jnp.int32)), jnp.float32(0), jnp.float32(1)


def _exact_hlo(policy):
    config, params = tiny(max_position_embeddings=2 * SLOTS)
    runtime = Runtime(dtype="float32", kv_cache=policy)
    shape = (config.num_layers, ROWS, config.num_kv_heads, SLOTS, config.head_dim)  # kv_cache.cache_shape
    layer = new_kv_cache(policy, shape, jnp.float32, jnp.zeros)
    kind = cache_type(config, runtime, bounded_kv=False)  # the full cache (SnapKV: its mask)
    assert kind is {None: KVCache, "int8": QuantizedKVCache, "fp8": QuantizedKVCache,
                    "snapkv": SnapKVMaskCache}[policy and policy.kind]
    keep = jnp.ones((ROWS, config.num_layers, SLOTS, config.num_kv_heads), bool)
    cache = SnapKVMaskCache(layer, layer, keep) if kind is SnapKVMaskCache else kind(layer, layer)
    return decode_step.lower(params, cache, *_common(config), _rope(config), config=config,
                             runtime=runtime).compile().as_text(), _shapes(layer)


@pytest.mark.parametrize("policy", [None, KVPolicy("int8"), KVPolicy("fp8"),
                                    KVPolicy("snapkv", window=4, budget=64, kernel=3)],
                         ids=["exact", "int8", "fp8", "snapkv-mask"])
def test_decode_step_writes_only_new_slots(policy):
    assert whole_cache_ops(*_exact_hlo(policy)) == []


@pytest.mark.parametrize("policy", [KVPolicy("streaming", sinks=4, window=SLOTS - 4),
                                    KVPolicy("snapkv", window=4, budget=SLOTS - 64, kernel=3)],
                         ids=["streaming", "snapkv"])
def test_bounded_decode_step_writes_only_new_slots(policy):
    config, params = tiny(max_position_embeddings=2 * SLOTS)
    runtime = Runtime(dtype="float32", kv_cache=policy)
    batch = new_batch(config, runtime, [np.zeros(SLOTS, np.int32)] * ROWS, range(ROWS),
                      65 if policy.kind == "snapkv" else 8, seed=0, temperature=0.0, top_p=1.0)
    cache = cache_type(config, runtime).init(config, runtime, batch)
    assert type(cache) is {"streaming": bounded_kv.StreamingCache, "snapkv": bounded_kv.SnapKVCache}[policy.kind]
    assert cache.layout.slots == SLOTS
    tokens, positions, keys, temperature, top_p = _common(config)
    hlo = bounded_kv.decode_step_bounded.lower(params, cache, tokens, positions, keys, temperature, top_p,
                                               _rope(config), config=config, runtime=runtime).compile().as_text()
    # attention reads every slot of a bounded cache
    assert whole_cache_ops(hlo, _shapes((cache.k, cache.v, cache.slot_pos)), slots=None) == []


def test_hybrid_decode_step_writes_only_new_slots():
    config, params = tiny("qwen3_5_text", num_hidden_layers=4, head_dim=8, linear_num_key_heads=2,
                          linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                          linear_conv_kernel_dim=4, layer_types=["linear_attention", "full_attention"] * 2,
                          max_position_embeddings=2 * SLOTS)
    cache = hybrid.new_cache(config, ROWS, SLOTS, jnp.float32, None)
    hlo = decode_hybrid_step.lower(params, cache, *_common(config), _rope(config), config=config,
                                   runtime=Runtime(dtype="float32")).compile().as_text()
    assert whole_cache_ops(hlo, _shapes((cache.k, cache.v))) == []


def test_the_check_sees_a_per_layer_scatter():
    """The check itself: a vmapped per-row write (what each layer's write used to compile to) is caught."""
    def write(cache, new, slots):
        return jax.vmap(lambda c, n, s: jax.lax.dynamic_update_slice(c, n, (0, s, 0, 0)))(cache, new, slots)

    cache = jnp.zeros((ROWS, 2, SLOTS, 2, 8))
    hlo = jax.jit(write, donate_argnums=0).lower(
        cache, jnp.ones((ROWS, 2, 1, 2, 8)), jnp.arange(ROWS, dtype=jnp.int32)).compile().as_text()
    assert whole_cache_ops(hlo, [cache.shape])
