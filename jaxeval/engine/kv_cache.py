"""The K/V decode cache: exact (KVCache) and quantized int8 / fp8 codes (QuantizedKVCache).

cache.k, cache.v [L, B, KV, S, hd] (latent attention: an empty value cache, hd 0; int8 / fp8:
QuantKV codes and float32 scales). Layers first and the sequence second-minor: a layer is one
contiguous slab and a key block of one row and KV head one contiguous run, which the decode step
reads in place. Stored [B, L, S, KV, hd] (or [B, L, KV, S, hd]), a TPU compile of the step re-laid
the whole cache out to [L, B, KV, S, hd] and back every step to attend from it. On a mesh: rows over data / fsdp, K/V heads over tensor, the
sequence whole (sharding.DECODE_CACHE). The streaming policy's masked form is this cache too: its
window and sinks are the policy's mask where attention reads (kv_policy.attention_window).

- Prefill runs chunk by chunk and writes every prompt token but the last, so it needs no head.
  All rows run each chunk together (padding past a prompt is overwritten by decoding before any
  query can see it), on one device or a mesh without a context axis; on a context-parallel mesh
  or when the rows' ropes differ, each prompt runs alone into its row. Either way each layer
  attends from its own slice of the cache's rows and the chunk's K/V are written after the layer
  scan, in place: the row's whole cache is never copied.
- Decode runs all rows at once (decode_row.decode_rows) with per-row positions: the per-token
  parts of a layer vmapped over the rows, attention over the batch, its key blocks sliced for every
  row in place. The first step feeds each prompt's last token. Each layer attends from the cache
  with the rows' own new K/V seen at their slots, and every layer's new K/V are written once after
  the layer scan, vector by vector in place into the donated cache (decode_row.write_cells).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.decode_row import decode_rows, scan_layers, write_cells
from jaxeval.engine.sampling import choose_tokens
from jaxeval.models.context import stripe_order, take_row, write_row
from jaxeval.models.decoder import embed_tokens, layer_forward
from jaxeval.models.kv_policy import new_kv_cache
from jaxeval.models.rope import RopeTables, rope_key, rope_tables
from jaxeval.models.sharding import DECODE_CACHE, constrain, host_array, zeros

LAYER_ROWS = DECODE_CACHE[1:]  # one layer of the decode cache: [B, KV, S, hd]
ROW_AXIS, SEQ_AXIS = 1, 3  # the decode cache's row and sequence axes


def cache_shape(config, rows: int, length: int, width: int) -> tuple:
    """The decode cache's shape [L, B, KV, S, width]."""
    return config.num_layers, rows, config.num_kv_heads, length, width


@dataclasses.dataclass
class KVCache:
    """The exact cache: k, v [L, B, KV, S, hd] in the run's dtype."""

    k: object
    v: object

    @classmethod
    def init(cls, config, runtime, batch) -> KVCache:
        return cls.zeros(config, runtime, batch.rows, batch.cache_len)

    @classmethod
    def zeros(cls, config, runtime, rows: int, length: int) -> KVCache:
        return cls(*(new_kv_cache(runtime.kv_cache if cls.quantized else None,
                                  cache_shape(config, rows, length, width), runtime.jnp_dtype,
                                  lambda s, d: zeros(s, d, runtime.mesh, DECODE_CACHE))
                     for width in (config.head_dim, config.value_dim)))  # latent attention: an empty value cache

    quantized = False  # QuantizedKVCache: codes and scales

    def visible(self):
        """bool [B, L, S, KV] of the slots each row's layers and KV heads still see, or None (all)."""
        return None

    def prefill(self, params, config, runtime, batch):
        cache = write_prompts(params, config, runtime, self, batch.prompts, batch.chunk, batch.rows)
        return cache.step(params, config, runtime, batch, host_array(batch.last_tokens, runtime.mesh),
                          host_array(batch.lengths - 1, runtime.mesh), 0)

    def step(self, params, config, runtime, batch, tokens, positions, fed: int):
        return decode_step(params, self, tokens, positions, *batch.sampling(fed), config=config, runtime=runtime)


@dataclasses.dataclass
class QuantizedKVCache(KVCache):
    """int8 / fp8 (runtime.kv_cache): k, v as QuantKV codes [B, L, S, KV, hd] and float32 scales
    [L, B, KV, S, 1]; a chunk's and a step's K/V are quantized before any query sees them."""

    quantized = True


for _kind in (KVCache, QuantizedKVCache):
    jax.tree_util.register_dataclass(_kind, data_fields=["k", "v"], meta_fields=[])


def write_prompts(params, config, runtime, cache: KVCache, prompts, chunk: int, rows: int) -> KVCache:
    """cache with every prompt's tokens but its last written into its row, chunk by chunk: every row's
    chunk in one step when the rows share one rope and the mesh has no context axis; else row by row.
    rows: the cache's rows (the prompts padded to a power of two; padding rows hold token 0)."""
    mesh = runtime.mesh
    together = mesh is None or mesh.shape.get("context", 1) == 1
    if together and rows > 1 and len({rope_key(config, p.size) for p in prompts}) == 1:
        groups = [(0, list(prompts) + [np.zeros(1, np.int32)] * (rows - len(prompts)))]
    else:
        groups = [(r, [p]) for r, p in enumerate(prompts)]
    for row, group in groups:
        longest = max(p.size for p in group)
        padded = np.zeros((len(group), -(-longest // chunk) * chunk), np.int32)
        for r, prompt in enumerate(group):
            padded[r, :prompt.size] = prompt
        rope = RopeTables(*(host_array(t, mesh) for t in rope_tables(config, group[0].size)))
        for start in range(0, longest - 1, chunk):
            cache = prefill_rows(params, cache, host_array(padded[:, start:start + chunk], mesh),
                                 host_array(np.int32(start), mesh), host_array(np.int32(row), mesh), rope,
                                 config=config, runtime=runtime)
    return cache


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def prefill_rows(params, cache: KVCache, chunk_ids, start, row, rope, *, config, runtime) -> KVCache:
    """Write the K/V of a prompt chunk into the cache, in place: chunk_ids int [R, C] at positions
    start .. start + C - 1, for every row (R = B; row 0) or for row `row` alone (R = 1).

    rope: the RopeTables the rows share (a prompt's: transformers' prefill is one forward over it).
    Positions past a prompt hold padding; decoding overwrites them before any query can see them
    (a query at position q sees keys <= q only). Each layer attends from its own slice of the
    rows' cache (cache[rows, layer]: one layer's copy, never the rows' whole cache), and the chunk's
    K/V of every layer are written after the scan. On a mesh the cache keeps DECODE_CACHE; one
    row of rows sharded over data / fsdp is taken and written by its owner (context.take_row,
    write_row); a context axis runs the chunk in striped token order (jaxeval.models.context).
    """
    mesh = runtime.mesh
    r, c = chunk_ids.shape
    whole = r == cache.k.shape[ROW_AXIS]  # every row at once (or the cache's only row)
    positions = start + jnp.arange(c)

    def layer_rows(t, i):  # [L, B, KV, S, ...] -> layer i of the chunk's rows [R, S, KV, ...], as layers read
        t = jax.lax.dynamic_index_in_dim(t, i, axis=0, keepdims=False)
        return jnp.swapaxes(t if whole else take_row(t, row, mesh, LAYER_ROWS), 1, 2)

    x = constrain(embed_tokens(params, config, chunk_ids), mesh, "batch", "sequence", "hidden")
    if mesh is not None and mesh.shape["context"] > 1:
        order, _ = stripe_order(c, mesh.shape["context"])
        x, positions = x[:, order], positions[jnp.asarray(order)]

    def layer(x, xs, stack_config):
        lp, inv_freq, scale, window, i = xs
        layer_cache = tuple(jax.tree.map(lambda t: layer_rows(t, i), kv) for kv in (cache.k, cache.v))
        return layer_forward(lp, stack_config, x, positions, (inv_freq, scale), window, layer_cache, start,
                             runtime.attention, mesh, cache_sharded=False,  # decode reads the whole sequence
                             policy=runtime.kv_cache)

    _, k_new, v_new = scan_layers(params, config, rope, layer, x)

    def write(t, new):  # new [L, R, C, KV, ...] (natural token order) -> layers, rows, KV, positions start ..
        new = jnp.swapaxes(new, 2, 3)
        if whole:
            return jax.lax.dynamic_update_slice(t, new.astype(t.dtype), (0, 0, 0, start, 0))
        return write_row(t, new, row, start, mesh, DECODE_CACHE, seq_axis=SEQ_AXIS, row_axis=ROW_AXIS)

    k, v = (constrain(jax.tree.map(write, t, new), mesh, *DECODE_CACHE) for t, new in ((cache.k, k_new),
                                                                                          (cache.v, v_new)))
    return dataclasses.replace(cache, k=k, v=v)


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def decode_step(params, cache: KVCache, tokens, positions, keys, temperature, top_p, rope, suppress=None, *, config,
                runtime):
    """Feed tokens int [B] at positions int [B] (one per row); write their K/V; sample the next tokens.

    rope: RopeTables per row (inv_freq [B, L, R/2], scale [B, L]), each for that row's position + 1
    tokens. suppress: None, or float32 [V] added to every row's logits (-inf at the EOS and stop ids
    while fewer than min_new_tokens are out, as transformers' MinNewTokensLengthLogitsProcessor).
    The cache is donated and updated in place; cache.visible() masks the slots a row still sees
    (SnapKV). Tokens and positions come back replicated.
    Returns (next tokens int32 [B], positions + 1, cache).
    """
    mesh = runtime.mesh
    logits, k_new, v_new = decode_rows(params, cache.k, cache.v, tokens, positions, rope, config=config,
                                       policy=runtime.kv_cache, keep=cache.visible(), layers_first=True)
    k, v = (write_cells(c, new, positions) for c, new in ((cache.k, k_new), (cache.v, v_new)))
    if suppress is not None:  # the first min_new_tokens steps: end-of-generation ids cannot be chosen
        logits = logits + suppress
    chosen = choose_tokens(logits, keys, positions, temperature, top_p)
    cache = dataclasses.replace(cache, k=constrain(k, mesh, *DECODE_CACHE), v=constrain(v, mesh, *DECODE_CACHE))
    return constrain(chosen, mesh, "read_rows"), constrain(positions + 1, mesh, "read_rows"), cache
