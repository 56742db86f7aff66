"""One layer of a stacked KV cache, read where it lies.

A prefill chunk's layer scan carries the whole cache [L, B, S, KV, hd] (under an int8 / fp8 policy,
QuantKV codes and scales) and writes each layer's new K/V into it in place; attention then reads
that layer's key blocks straight out of the stack. Slicing the layer out first (what scanning over
the cache did) copies it: 16 MB per layer and chunk for the 57M Llama at 32k keys, and on an
accelerator the scan's copies held as much memory as the cache itself (issues 25 and 27).

`CacheLayer` stands where attention takes k or v [B, S, KV, hd]: backends that fetch K/V block by
block (REGISTRY's `reads_cache_layer`) take it and call `kv_block`; the others get `dense_layer`,
the one layer contiguous (a kernel's operand must be).
"""

from __future__ import annotations

import dataclasses

import jax

from jaxeval.models.kv_policy import dense_kv


@dataclasses.dataclass(frozen=True)
class CacheLayer:
    """Layer `layer` (int scalar, may be traced) of stack, a cache [L, B, S, KV, hd] or its QuantKV.
    dtype: the dtype blocks are read in (a quantized cache's codes are rebuilt in it)."""
    stack: object
    layer: object
    dtype: object
    row: object = None  # None: every row; an int scalar: that row alone (B = 1), read in place too

    @property
    def shape(self) -> tuple:
        """[B, S, KV, hd], the shape of the layer as attention sees it."""
        leaf = jax.tree.leaves(self.stack)[0]
        rows = leaf.shape[1] if self.row is None else 1
        return (rows,) + tuple(leaf.shape[2:-1]) + (self.width,)

    @property
    def width(self) -> int:
        return jax.tree.leaves(self.stack)[0].shape[-1]  # QuantKV: the codes' head_dim (scales are [..., 1])


def kv_block(x, start, size):
    """Keys or values start .. start + size - 1 of x [B, S, KV, hd] or a CacheLayer -> [B, size, KV, hd]."""
    if not isinstance(x, CacheLayer):
        return jax.lax.dynamic_slice_in_dim(x, start, size, axis=1)
    row, rows = (0, None) if x.row is None else (x.row, 1)
    block = jax.tree.map(lambda c: jax.lax.dynamic_slice(c, (x.layer, row, start, 0, 0), (1, rows or c.shape[1], size)
                                                         + c.shape[3:])[0], x.stack)
    return dense_kv(block, x.dtype)


def row_of(x, row):
    """Row `row` of x [B, S, KV, hd] (a copy) or of a CacheLayer (a view: its blocks still read in place)."""
    if isinstance(x, CacheLayer):
        return dataclasses.replace(x, row=row)
    return jax.lax.dynamic_slice_in_dim(x, row, 1, axis=0)


def layer_of(stack, layer):
    """Layer `layer` of stack [L, ...] (leaf by leaf for QuantKV) -> [...]: a copy of the layer."""
    return jax.tree.map(lambda c: jax.lax.dynamic_index_in_dim(c, layer, keepdims=False), stack)


def dense_layer(x):
    """x itself, or a CacheLayer's whole layer [B, S, KV, hd] in its dtype (a copy of the layer)."""
    if not isinstance(x, CacheLayer):
        return x
    layer = dense_kv(layer_of(x.stack, x.layer), x.dtype)
    return layer if x.row is None else row_of(layer, x.row)


def write_layer(stack, new, layer, start):
    """stack [L, B, S, KV, hd] (leaf by leaf for QuantKV) with new [B, T, KV, hd] written at layer `layer`,
    positions start .. start + T - 1: an in-place dynamic-update-slice of the donated cache."""
    return jax.tree.map(lambda c, n: jax.lax.dynamic_update_slice(c, n[None].astype(c.dtype), (layer, 0, start, 0, 0)),
                        stack, new)
