"""Attention on a mesh: tensor parallel over heads, context parallel over a chunk's queries.

Context parallelism (all-gather of K/V with load-balanced striping). A prefill chunk of T
tokens is cut into 2 * cp stripes; context shard i holds stripes i and 2 * cp - 1 - i, one
early and one late, so every shard has the same causal work. The decoder runs the whole chunk
in this striped token order (`stripe_order`), which is invisible to everything but attention
and RoPE (RoPE takes the permuted positions). Inside each shard the chunk's keys and values
are all-gathered over `context` and put back in natural order, the layer's cache (split over
`context` along the sequence) is all-gathered and the chunk written into it; each shard's
queries stay local. The shard then calls the backend twice, once per stripe, each a contiguous
run of queries starting at its own absolute position, so any backend with the common signature
(jaxeval.models.attention) works unchanged: causal masks, sliding windows, soft-capping, GQA.
`write_chunk` stores the chunk into the sharded multi-layer cache, each shard writing only its
own positions (XLA left to itself gathers the whole cache for that write).

Generate's cache [B, L, S, KV, hd] is split by rows over data/fsdp; take_row / write_row move
one prompt's row in and out of it without gathering the other rows.

Tensor parallelism: query heads are split over `tensor`. K/V heads are split too when
`tensor` divides them; otherwise they are replicated and each shard picks the one K/V head its
query heads share (check_mesh_fits guarantees `tensor` is then a multiple of the KV heads).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec as P

from jaxeval.models.mesh import mesh_sizes
from jaxeval.models.sharding import spec

try:  # jax >= 0.7
    _shard_map = jax.shard_map
except AttributeError:  # pragma: no cover - older jax
    from jax.experimental.shard_map import shard_map as _shard_map


@functools.lru_cache(maxsize=64)
def stripe_order(t: int, cp: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, inverse): x[:, order] is the striped layout of a T-token chunk; y[:, inverse] undoes it."""
    if cp == 1:
        order = np.arange(t)
    else:
        if t % (2 * cp):
            raise ValueError(f"a chunk of {t} tokens cannot be cut into 2 * context = {2 * cp} stripes")
        stripes = np.arange(t).reshape(2 * cp, t // (2 * cp))
        order = np.concatenate([np.concatenate([stripes[i], stripes[2 * cp - 1 - i]]) for i in range(cp)])
    return order.astype(np.int32), np.argsort(order).astype(np.int32)


def mesh_attention(attend, q, k, v, cache, start, window, scale, softcap, mesh: Mesh, cache_sharded: bool = True,
                   sink_logits=None):
    """attend() per shard, with this chunk's K/V gathered and written into the layer's cache.

    q [B, T, H, hd], k, v [B, T, KV, hd]: the chunk, in striped order when context > 1.
    cache: (k, v) [B, S, KV, hd] in natural order holding positions < start (split over
    `context` along S when cache_sharded and S allows), or None: attention over the chunk alone.
    Inside each shard the chunk's K/V and the cache are all-gathered over `context` (one layer
    at a time), so XLA never gathers a whole multi-layer cache.
    sink_logits: None, or float [H] (gpt-oss's learned sinks), split over `tensor` as the query heads.
    Returns (attention [B, T, H, hd] in q's order, k, v [B, T, KV, hd] in natural order).
    """
    sizes = mesh_sizes(mesh)
    cp, tp = sizes["context"], sizes["tensor"]
    b, t, h, _ = q.shape
    num_kv = k.shape[2]
    q_spec = spec(q.shape, ("batch", "sequence", "act_heads", "head_dim"), mesh)
    chunk_spec = spec(k.shape, ("batch", "sequence", "act_kv_heads", "head_dim"), mesh)
    whole_spec = spec(k.shape, ("batch", "hidden", "act_kv_heads", "head_dim"), mesh)
    if cp > 1 and (q_spec[1] is None or chunk_spec[1] is None):
        raise ValueError(f"context={cp} needs the chunk length {t} to be a multiple of it")
    kv_split = whole_spec[2] is not None
    inverse = stripe_order(t, cp)[1]
    no_cache = cache is None
    if no_cache:
        # shard_map takes a fixed argument list: without a cache, k and v fill its slots and
        # local() ignores them (no_cache)
        cache_spec, cache = chunk_spec, (k, v)
    else:
        cache_spec = spec(cache[0].shape, ("batch", "cache_sequence" if cache_sharded else "hidden", "act_kv_heads",
                                           "head_dim"), mesh)
    cache_split = cache_spec[1] is not None
    no_sinks = sink_logits is None
    if no_sinks:  # a fixed argument list again: local() passes no sinks on
        sink_logits = jnp.zeros((h,), q.dtype)

    def gather(x, split):
        return jax.lax.all_gather(x, "context", axis=1, tiled=True) if split else x

    def local(q, k, v, cache_k, cache_v, start, window, sinks):
        extra = {} if no_sinks else {"sink_logits": sinks}  # this shard's query heads' sinks
        if cp > 1:  # the whole chunk's K/V, back in natural order: [B, T/cp, KV, hd] -> [B, T, KV, hd]
            k, v = gather(k, True)[:, inverse], gather(v, True)[:, inverse]
        if no_cache:
            keys, values = k, v
        else:
            keys = jax.lax.dynamic_update_slice_in_dim(gather(cache_k, cache_split), k.astype(cache_k.dtype), start, 1)
            values = jax.lax.dynamic_update_slice_in_dim(gather(cache_v, cache_split), v.astype(cache_v.dtype), start,
                                                         1)
        if tp > 1 and not kv_split:  # replicated K/V heads: keep the one this shard's query heads use
            j = jax.lax.axis_index("tensor") // (tp // num_kv)
            keys = jax.lax.dynamic_slice_in_dim(keys, j, 1, axis=2)
            values = jax.lax.dynamic_slice_in_dim(values, j, 1, axis=2)
        if cp == 1:
            return attend(q, keys, values, start, window, scale, softcap, **extra), k, v
        # this shard's q [B, 2 * stripe, H, hd] is stripes i and 2 * cp - 1 - i (one early, one late in
        # the chunk): each half attends from its own first position, so the causal work is even per shard
        i = jax.lax.axis_index("context")
        half = q.shape[1] // 2
        stripe = t // (2 * cp)
        early = attend(q[:, :half], keys, values, start + i * stripe, window, scale, softcap, **extra)
        late = attend(q[:, half:], keys, values, start + (2 * cp - 1 - i) * stripe, window, scale, softcap, **extra)
        return jnp.concatenate([early, late], axis=1), k, v

    run = _shard_map(local, mesh=mesh, in_specs=(q_spec, chunk_spec, chunk_spec, cache_spec, cache_spec, P(), P(),
                                                 P(q_spec[2])),
                     out_specs=(q_spec, whole_spec, whole_spec), check_vma=False)
    return run(q, k, v, cache[0], cache[1], jnp.asarray(start, jnp.int32), jnp.asarray(window, jnp.int32),
               sink_logits)


def write_chunk(cache, new, start, mesh: Mesh, names, layer=None):
    """cache [L, B, S, KV, hd] (sharded by the logical `names`) with new [L, B, T, KV, hd] written at
    positions start .. start + T - 1 (layer: None, or an int scalar, new [B, T, KV, hd] written into that
    layer alone). Each sequence shard writes only the part it holds, so the cache is never gathered:
    every shard updates a window of min(T, S_local) positions, masked."""
    cache_spec = spec(cache.shape, names, mesh)
    axis = cache_spec[2]
    new = new.astype(cache.dtype)
    one_layer = layer is not None
    if one_layer:
        new = new[None]  # [1, B, T, KV, hd], written at the layer
    else:
        layer = 0
    if axis is None:
        return jax.lax.dynamic_update_slice(cache, new, (layer, 0, start, 0, 0))
    new_spec = P(None if one_layer else cache_spec[0], cache_spec[1], None, *cache_spec[3:])

    def local(cache, new, start, layer):
        n, t = cache.shape[2], new.shape[2]
        w = min(n, t)
        base = jax.lax.axis_index(axis) * n
        offset = jnp.clip(start - base, 0, n - w)
        index = base + offset + jnp.arange(w) - start  # which new row lands at each position of the window
        inside = ((index >= 0) & (index < t))[None, None, :, None, None]
        rows = jnp.take(new, jnp.clip(index, 0, t - 1), axis=2)
        at = (layer, 0, offset, 0, 0)
        old = jax.lax.dynamic_slice(cache, at, rows.shape)
        return jax.lax.dynamic_update_slice(cache, jnp.where(inside, rows, old), at)

    run = _shard_map(local, mesh=mesh, in_specs=(cache_spec, new_spec, P(), P()), out_specs=cache_spec,
                     check_vma=False)
    return run(cache, new, jnp.asarray(start, jnp.int32), jnp.asarray(layer, jnp.int32))


def take_row(cache, row, mesh: Mesh, names):
    """cache [B, ...] (rows sharded by the logical `names`) -> row `row` as [1, ...], whole on every
    shard: the owner contributes it, the others zeros, summed over the batch axes (exact), so the
    other rows are never gathered."""
    cache_spec = spec(cache.shape, names, mesh)
    axis = cache_spec[0]
    if axis is None:
        return jax.lax.dynamic_slice_in_dim(cache, row, 1, axis=0)

    def local(cache, row):
        n = cache.shape[0]
        base = jax.lax.axis_index(axis) * n
        piece = jax.lax.dynamic_slice_in_dim(cache, jnp.clip(row - base, 0, n - 1), 1, axis=0)
        return jax.lax.psum(jnp.where((row >= base) & (row < base + n), piece, jnp.zeros_like(piece)), axis)

    run = _shard_map(local, mesh=mesh, in_specs=(cache_spec, P()), out_specs=P(None, *cache_spec[1:]),
                     check_vma=False)
    return run(cache, jnp.asarray(row, jnp.int32))


def write_row(cache, new, row, start, mesh: Mesh, names, seq_axis: int = 2, row_axis: int = 0):
    """cache [B, L, S, ...] (rows sharded by `names`, S whole; the rows at row_axis, S at seq_axis) with
    new [1, L, T, ...] (1 at row_axis) written at (row, 0, start): only the shard holding the row changes it."""
    cache_spec = spec(cache.shape, names, mesh)
    axis = cache_spec[row_axis]
    new = new.astype(cache.dtype)
    def at(row, start):
        return tuple(row if a == row_axis else start if a == seq_axis else 0 for a in range(cache.ndim))

    if axis is None:
        return jax.lax.dynamic_update_slice(cache, new, at(row, start))

    def local(cache, new, row, start):
        n = cache.shape[row_axis]
        base = jax.lax.axis_index(axis) * n
        where = at(jnp.clip(row - base, 0, n - 1), start)
        old = jax.lax.dynamic_slice(cache, where, new.shape)
        mine = (row >= base) & (row < base + n)
        return jax.lax.dynamic_update_slice(cache, jnp.where(mine, new, old), where)

    new_spec = P(*(None if a == row_axis else s for a, s in enumerate(cache_spec)))
    run = _shard_map(local, mesh=mesh, in_specs=(cache_spec, new_spec, P(), P()),
                     out_specs=cache_spec, check_vma=False)
    return run(cache, new, jnp.asarray(row, jnp.int32), jnp.asarray(start, jnp.int32))
