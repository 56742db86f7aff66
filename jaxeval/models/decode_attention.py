"""Decode attention over a batch of rows: each row's one query against its row of a stacked KV cache.

The rows share one loop over key blocks (from the first block any row can see to the last), and
each block is sliced for all rows at once at one offset, cache[:, layer, j * bk : (j + 1) * bk]: a
strided read of the cache in place. Under vmap each row's own loop bound and offset made every block
a per-row gather copied out of the cache (on TPU, jaxeval compile's 8B step at batch 8 over 131,072
slots: about 30x the HBM roofline, most of it those copies and the new key's substitution into its
block). A row masks the keys it must not see (past its position, outside its window, dropped by
SnapKV), so the blocks outside its own range add exactly nothing (exp underflows to 0).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxeval.models.attention_mask import MASK_VALUE
from jaxeval.models.kv_policy import dense_kv
from jaxeval.models.online_softmax import head_rows, online_init


def decode_attention_rows(q, cache_k, cache_v, layer, positions, window, scale, softcap=None, block_k=512,
                          sinks=None, keep=None, sink_logits=None, slot_positions=None, new_kv=None,
                          layers_first: bool = False):
    """q [B, H, hd], row b's query at positions[b]; cache_k, cache_v [B, L, S, KV, hd] (layers_first:
    [L, B, KV, S, hd], the full decode cache's layout, whose blocks need no transposing; a quantized
    cache's QuantKV codes, rebuilt block by block in q's dtype); layer int scalar; window, sinks: the
    layer's (scalars). keep: None, or bool [B, L, S, KV], the slots each KV head still sees (SnapKV).
    slot_positions: None (slot j holds position j), or int [B, L, S, KV], the position each slot of a
    bounded cache holds (EMPTY_SLOT where none): then every block is visited and the causal / window /
    sink rules apply to the slots' positions. new_kv: None, or (k, v [B, KV, hd] as the cache stores
    them, slots int [B]): each row's own key and value, not yet in the cache, seen at its slot in place
    of what the cache holds there (the step writes every layer's K/V once after its layer scan); they
    are merged after the blocks, the slot itself masked in them.
    -> [B, H, hd] in q's dtype.
    """
    b, h, d = q.shape
    shape = cache_k_leaf(cache_k).shape
    s_len, num_kv = (shape[3], shape[2]) if layers_first else (shape[2], shape[3])
    bk = min(block_k, s_len)
    if s_len % bk:
        raise ValueError(f"decode attention needs the cache length {s_len} to be a multiple of {bk}")
    rows = q.reshape(b, num_kv, h // num_kv, d)  # the query heads of each KV group
    pos = positions[:, None, None, None]  # against scores [B, KV, G, bk]
    keys = "bksd" if layers_first else "bskd"  # a block [B, KV, bk, hd] or [B, bk, KV, hd]
    if slot_positions is None:
        first = jnp.where(window > 0, jnp.maximum(positions - window + 1, 0), 0) // bk
        lo, hi = first.min(), (positions // bk + 1).max()
    else:  # slots are not in position order: visit them all (a bounded cache is small)
        lo, hi = 0, s_len // bk

    def per_slot(table, start):  # [B, L, S, KV] -> this layer's block [B, KV, 1, bk]
        block = jax.lax.dynamic_slice(table, (0, layer, start, 0), (b, 1, bk, num_kv))[:, 0]
        return jnp.swapaxes(block, 1, 2)[:, :, None, :]

    def key_block(j, carry):
        m, l, acc = carry
        start = j * bk
        kb, vb = (_block(cache, layer, start, bk, q.dtype, layers_first) for cache in (cache_k, cache_v))
        s = jnp.einsum(f"bkgd,{keys}->bkgs", rows, kb, preferred_element_type=jnp.float32) * scale
        if softcap:
            s = jnp.tanh(s / softcap) * softcap
        slot = start + jnp.arange(bk)
        key_positions = slot if slot_positions is None else per_slot(slot_positions, start)
        diff = pos - key_positions
        seen = (diff >= 0) & ((window <= 0) | (diff < window))
        if sinks is not None:
            seen = seen | ((diff >= 0) & (key_positions < sinks))
        if keep is not None:
            seen = seen & per_slot(keep, start)
        if new_kv is not None:  # the slot the new key goes to holds a stale one: the new one is merged below
            seen = seen & (slot != new_kv[2][:, None, None, None])
        s = jnp.where(seen, s, MASK_VALUE)
        m_new = jnp.maximum(m, s.max(axis=-1))
        p = jnp.exp(s - m_new[..., None])
        alpha = jnp.exp(m - m_new)
        pv = jnp.einsum(f"bkgs,{keys}->bkgd", p.astype(vb.dtype), vb, preferred_element_type=jnp.float32)
        return m_new, l * alpha + p.sum(axis=-1), acc * alpha[..., None] + pv

    init = online_init((b, num_kv, h // num_kv), d, None if sink_logits is None else head_rows(sink_logits, num_kv))
    if sinks is not None and slot_positions is None:  # the sinks' blocks that lie before the windows' first
        init = jax.lax.fori_loop(0, jnp.minimum(-(-sinks // bk), lo), key_block, init)
    m, l, acc = jax.lax.fori_loop(lo, hi, key_block, init)
    if new_kv is not None:
        m, l, acc = _merge_new(rows, new_kv, layer, keep, m, l, acc, scale, softcap)
    return (acc / l[..., None]).reshape(b, h, d).astype(q.dtype)


def _merge_new(rows, new_kv, layer, keep, m, l, acc, scale, softcap):
    """The online softmax with each row's new key and value added (a key at the query's own position:
    always causal and inside any window; SnapKV's mask at its slot still applies)."""
    k, v = (dense_kv(t, rows.dtype) for t in new_kv[:2])  # [B, KV, hd]
    s = jnp.einsum("bkgd,bkd->bkg", rows, k, preferred_element_type=jnp.float32) * scale
    if softcap:
        s = jnp.tanh(s / softcap) * softcap
    if keep is not None:
        b, num_kv = k.shape[:2]
        seen = jax.vmap(lambda t, slot: jax.lax.dynamic_slice(t, (layer, slot, 0), (1, 1, num_kv))[0, 0])(
            keep, new_kv[2])
        s = jnp.where(seen[:, :, None], s, MASK_VALUE)
    m_new = jnp.maximum(m, s)
    p = jnp.exp(s - m_new)
    alpha = jnp.exp(m - m_new)
    pv = (p.astype(v.dtype).astype(jnp.float32))[..., None] * v.astype(jnp.float32)[:, :, None, :]  # as the blocks' einsum
    return m_new, l * alpha + p, acc * alpha[..., None] + pv


def cache_k_leaf(cache):
    """The codes (or the array) of a cache that may be a QuantKV."""
    return jax.tree.leaves(cache)[0]


def _block(cache, layer, start, size, dtype, layers_first):
    """Slots start .. start + size - 1 of one layer of every row of a stacked cache [B, L, S, KV, hd]
    -> [B, size, KV, hd] (layers_first: [L, B, KV, S, hd] -> [B, KV, size, hd]): the stored array's own
    dtype, or a quantized cache's codes rebuilt in dtype."""
    layer_axis, seq_axis = (0, 3) if layers_first else (1, 2)

    def piece(c):
        at = tuple(layer if a == layer_axis else start if a == seq_axis else 0 for a in range(c.ndim))
        sizes = tuple(1 if a == layer_axis else size if a == seq_axis else n for a, n in enumerate(c.shape))
        return jnp.squeeze(jax.lax.dynamic_slice(c, at, sizes), layer_axis)

    block = jax.tree.map(piece, cache)
    return dense_kv(block, dtype)


def decode_attention(q, cache_k, cache_v, layer, position, window, scale, softcap=None, block_k=512, sinks=None,
                     keep=None, sink_logits=None, slot_positions=None, new_kv=None):
    """One query against one layer of a stacked KV cache, for token-by-token decoding.

    q [H, hd] at `position`; cache_k, cache_v [L, S, KV, hd] (this query's key already written;
    a quantized cache's QuantKV codes, rebuilt block by block in q's dtype); layer, position int
    scalars. Key blocks are sliced straight out of the stacked cache and only those the query can
    see (causal, sliding window, sinks) are visited, so the cache is never copied (every backend
    decodes with this: one query row has no long query blocks to tile). keep: None, or bool
    [L, S, KV], the slots each KV head still sees (a SnapKV-compressed prompt). slot_positions: None
    (slot j holds position j), or int [L, S, KV], the position each slot of a bounded cache holds
    (jaxeval.engine.bounded_kv: a ring buffer, a compacted prompt; EMPTY_SLOT where none): then
    every block is visited and the causal / window / sink rules apply to the slots' positions.
    new_kv: None, or (k, v [KV, hd] as the cache stores them, slot int): this query's own key and
    value, not yet in the cache, seen at `slot` (holding `position`) in place of what the cache holds
    there. The batched decode step writes every layer's K/V once after its layer scan, so no
    per-layer write of a vmapped row becomes a scatter over the whole cache.
    A batch of one of decode_attention_rows (what the batched step runs).
    """
    def one(t):  # this query's row as a batch of one
        return None if t is None else jax.tree.map(lambda a: a[None], t)

    out = decode_attention_rows(q[None], one(cache_k), one(cache_v), layer, jnp.asarray(position)[None], window, scale,
                                softcap, block_k, sinks, one(keep), sink_logits, one(slot_positions),
                                None if new_kv is None else (one(new_kv[0]), one(new_kv[1]), jnp.asarray(new_kv[2])[None]))
    return out[0]
