"""The batch's decode step through the layers (all rows at once), and the one write of a step's new
K/V into the batch cache after it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.models.decode_attention import decode_attention_rows
from jaxeval.models.decoder import attention_inputs, embed_tokens, final_logits, layer_output, sink_logits
from jaxeval.models.kv_policy import attention_window, stored_kv
from jaxeval.models.layer_stacks import layer_stacks
from jaxeval.models.rope import RopeTables

DECODE_BLOCK = 512  # the fewest keys decode attention reads per trip of its key-block loop
DECODE_TRIPS = 16  # the most trips per layer and step over a long cache


def decode_block(slots: int) -> int:
    """Keys per trip of decode attention's loop over a cache of `slots` (a multiple of it): 512, or
    slots / 16 past 8,192 slots, so a step runs at most 16 trips per layer; the last trip reads at most
    1/16 of the cache past the position. A trip costs far more than its keys' bytes: on TPU (jaxeval
    compile, the 8B at batch 8 over 131,072 slots on v5p-8) 254 trips of 512 keys were estimated at
    1.09 s per step, 16 trips at 0.42 s (then still with per-row block copies under vmap; the rows
    now share the loop: 42 ms against a 13.8 ms HBM roofline, perf/decode_roofline.py)."""
    if slots <= DECODE_BLOCK * DECODE_TRIPS or slots % DECODE_TRIPS:
        return DECODE_BLOCK
    return slots // DECODE_TRIPS


def decode_rows(params, cache_k, cache_v, tokens, positions, rope, *, config, policy=None, keep=None, slots=None,
                slot_positions=None, layers_first: bool = False):
    """Every row's one token: tokens int [B] at positions int [B]; cache [B, L, S, KV, hd] (layers_first:
    [L, B, KV, S, hd], the full decode cache's layout) holding each row's positions < its position.

    rope: per-row RopeTables (inv_freq [B, L, R/2], scale [B, L]), each for its row's position + 1
    tokens; policy: the run's KV-cache policy (Runtime.kv_cache; None: exact).
    The cache is only read: each layer attends from it for all rows at once (decode_attention_rows:
    one loop over key blocks, each sliced for every row in place) with the rows' own new K/V seen at
    their slots, and the new K/V of every layer come back for write_step to store once (a write per
    layer of a vmapped row compiles to a scatter over the whole cache). The per-token parts of a
    layer (projections, rope, MLP) are vmapped over the rows. keep: None, or the rows' SnapKV masks
    [B, L, S, KV]. A bounded cache (jaxeval.engine.bounded_kv): slots, int [B], the slot each row's
    K/V go to (default: its position), and slot_positions int [B, L, S, KV], the position each slot
    holds (this step's included).
    Returns (float32 logits [B, V] of the next tokens, new keys, new values [B, L, KV, hd] as the
    cache stores them: QuantKV under int8 / fp8).
    """
    write_at = positions if slots is None else slots
    # a bounded cache is small and every slot is read: one block (jaxeval.engine.bounded_kv)
    slots_len = jax.tree.leaves(cache_k)[0].shape[3 if layers_first else 2]
    bounded = ({"block_k": decode_block(slots_len)} if slot_positions is None else
               {"slot_positions": slot_positions, "block_k": slots_len})

    def layer(x, xs, stack_config):  # x [B, 1, 1, D]
        lp, inv_freq, scale, window, i = xs  # inv_freq [B, R/2], scale [B]: the rows' tables of this layer

        def inputs(x, position, inv_freq, scale):  # one row's token
            q, k, v = attention_inputs(lp, stack_config, x, position + jnp.arange(1), (inv_freq, scale))
            k, v = (jax.tree.map(lambda n, c: n[0, 0].astype(c.dtype), stored_kv(policy, new), cache)
                    for new, cache in ((k, cache_k), (v, cache_v)))
            return q[0, 0], k, v

        q, k, v = jax.vmap(inputs)(x, positions, inv_freq, scale)  # [B, H, hd], [B, KV, hd]
        window, sinks = attention_window(policy, window)
        latent = config.mla is not None  # latent attention: the values are the keys
        attn = decode_attention_rows(q, cache_k, cache_k if latent else cache_v, i, positions, window,
                                     config.attention_scale, config.attn_logit_softcap, keep=keep,
                                     sink_logits=sink_logits(lp, config),
                                     new_kv=(k, k if latent else v, write_at), layers_first=layers_first, **sinks,
                                     **bounded)
        x = jax.vmap(lambda x, a: layer_output(lp, stack_config, x, a[None, None]))(x, attn)
        return x, (k, v)

    layer_first = RopeTables(*(jnp.swapaxes(t, 0, 1) for t in rope))  # the scan slices the layer axis
    x = embed_tokens(params, config, tokens[:, None, None])  # [B, 1, 1, D]: each row a batch of one
    x, k_new, v_new = scan_layers(params, config, layer_first, layer, x)
    k_new, v_new = (jax.tree.map(lambda t: jnp.swapaxes(t, 0, 1), n) for n in (k_new, v_new))
    return final_logits(params, config, x[:, 0, 0]), k_new, v_new


def scan_layers(params, config, rope, layer, x):
    """x through the layer stacks (jaxeval.models.layer_stacks: the dense first layers, then the rest), each
    a scan of layer(x, (layer params, inv_freq, scale, window, layer index), stack_config) -> (x, (k, v)).
    The cache and the per-layer tables are indexed by the model's layer. -> (x, k_new, v_new [L, ...])."""
    windows = jnp.asarray(np.array(config.layer_windows, dtype=np.int32))
    news = []
    for stack in layer_stacks(config):
        rows = stack.rows
        xs = (params[stack.name], rope.inv_freq[rows], rope.scale[rows], windows[rows],
              jnp.arange(config.num_layers)[rows])
        x, new = jax.lax.scan(functools.partial(layer, stack_config=stack.config), x, xs)
        news.append(new)
    k_new, v_new = (jax.tree.map(lambda *parts: jnp.concatenate(parts), *(n[j] for n in news)) for j in (0, 1))
    return x, k_new, v_new


def write_step(cache, new, slots, row_axis: int = 0, seq_axis: int = 2):
    """cache [B, L, S, KV, ...] (row_axis 1: [L, B, S, KV, ...], a hybrid's; with seq_axis 3:
    [L, B, KV, S, ...], the full decode cache) with each row's new K/V [B, L, KV, ...] (all layers) written at its slot
    (int [B]): one in-place update of L vectors per row and step, leaf by leaf for QuantKV (a bounded
    cache's slot positions: [B, L, S, KV])."""

    def write(c, n):
        def row(r, c):
            update = jnp.expand_dims(jax.lax.dynamic_index_in_dim(n, r, keepdims=False), (row_axis, seq_axis))
            at = [0] * c.ndim
            at[row_axis], at[seq_axis] = r, slots[r]
            return jax.lax.dynamic_update_slice(c, update.astype(c.dtype), at)
        return jax.lax.fori_loop(0, c.shape[row_axis], row, c)

    return jax.tree.map(write, cache, new)


def write_cells(cache, new, slots):
    """cache [L, B, KV, S, ...] (kv_cache's layout) with each row's new K/V [B, L, KV, ...] written at its
    slot (int [B]), in place, one vector (a layer, row and KV head's) per update: each a contiguous run
    of the cache. Updates of a row's [L, 1, KV, 1, hd] or a layer's [1, 1, KV, 1, hd] made a TPU compile
    re-lay the whole cache out (and back) every step so that they were contiguous (+17 GiB per chip of
    temporaries for the 8B at batch 8 and 131,072 slots on v5p-8)."""

    def write(c, n):
        layers, rows, heads = c.shape[:3]
        width = n.shape[-1]

        def cell(i, c):
            r, l, h = i // (layers * heads), i // heads % layers, i % heads
            update = jax.lax.dynamic_slice(n, (r, l, h, 0), (1, 1, 1, width)).reshape(1, 1, 1, 1, width)
            return jax.lax.dynamic_update_slice(c, update.astype(c.dtype), (l, r, h, slots[r], 0))

        return jax.lax.fori_loop(0, rows * layers * heads, cell, c)

    return jax.tree.map(write, cache, new)
