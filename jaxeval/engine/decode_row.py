"""One sequence's decode step through the layers: the body generate's batched decode vmaps over rows,
and the one write of a step's new K/V into the batch cache after it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.models.attention import decode_attention
from jaxeval.models.decoder import attention_inputs, embed_tokens, final_logits, layer_output, sink_logits
from jaxeval.models.kv_policy import attention_window, stored_kv
from jaxeval.models.layer_stacks import layer_stacks

DECODE_BLOCK = 512  # the fewest keys decode attention reads per trip of its key-block loop
DECODE_TRIPS = 16  # the most trips per layer and step over a long cache


def decode_block(slots: int) -> int:
    """Keys per trip of decode attention's loop over a cache of `slots` (a multiple of it): 512, or
    slots / 16 past 8,192 slots, so a step runs at most 16 trips per layer; the last trip reads at most
    1/16 of the cache past the position. A trip costs far more than its keys' bytes: on TPU (jaxeval
    compile, the 8B at batch 8 over 131,072 slots on v5p-8) 254 trips of 512 keys were estimated at
    1.09 s per step, 16 trips at 0.42 s, against 14 ms of HBM reads. What is left is the rows' own loop
    bounds under vmap (each block gathered row by row) and the cache's [.., KV, hd] minor dimensions
    with 2 KV heads per chip; a loop bound shared by the batch made XLA re-lay the whole cache out
    every step (32 GiB), so the bounds stay per row."""
    if slots <= DECODE_BLOCK * DECODE_TRIPS or slots % DECODE_TRIPS:
        return DECODE_BLOCK
    return slots // DECODE_TRIPS


def decode_row(params, cache_k, cache_v, token, position, rope, *, config, policy=None, keep=None, slot=None,
               slot_positions=None):
    """One sequence, one token: token (int scalar) at `position`; cache [L, S, KV, hd] holding positions < position.

    rope: this row's RopeTables (inv_freq [L, R/2], scale [L]) for a sequence of position + 1 tokens;
    policy: the run's KV-cache policy (Runtime.kv_cache; None: exact).
    The cache is only read: each layer attends from it with its own new K/V seen at their slot
    (decode_attention's new_kv), and the new K/V of every layer come back for write_step to store
    once for the whole batch (a write per layer of a vmapped row compiles to a scatter over the
    whole cache). keep: None, or this row's SnapKV mask [L, S, KV]. A bounded cache
    (jaxeval.engine.bounded_kv): slot, the int slot the K/V go to (default: position), and
    slot_positions int [L, S, KV], the position each slot holds (this one's included).
    Returns (float32 logits [V] of the next token, new keys, new values [L, KV, hd] as the cache
    stores them: QuantKV under int8 / fp8).
    """
    positions = position + jnp.arange(1)
    write_at = position if slot is None else slot
    # a bounded cache is small and every slot is read: one block (jaxeval.engine.bounded_kv)
    bounded = ({"block_k": decode_block(cache_k.shape[1])} if slot_positions is None else
               {"slot_positions": slot_positions, "block_k": cache_k.shape[1]})

    def layer(x, xs, stack_config):
        lp, inv_freq, scale, window, i = xs
        q, k, v = attention_inputs(lp, stack_config, x, positions, (inv_freq, scale))  # [1, 1, H or KV, hd]
        k, v = (jax.tree.map(lambda n, c: n[0, 0].astype(c.dtype), stored_kv(policy, new), cache)
                for new, cache in ((k, cache_k), (v, cache_v)))
        window, sinks = attention_window(policy, window)
        latent = config.mla is not None  # latent attention: the values are the keys
        attn = decode_attention(q[0, 0], cache_k, cache_k if latent else cache_v, i, position, window,
                                config.attention_scale, config.attn_logit_softcap, keep=keep,
                                sink_logits=sink_logits(lp, config), new_kv=(k, k if latent else v, write_at),
                                **sinks, **bounded)
        return layer_output(lp, stack_config, x, attn[None, None]), (k, v)

    x, k_new, v_new = scan_layers(params, config, rope, layer, embed_tokens(params, config, token[None, None]))
    return final_logits(params, config, x[0, 0]), k_new, v_new


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


def write_step(cache, new, slots, row_axis: int = 0):
    """cache [B, L, S, KV, ...] (row_axis 1: [L, B, S, KV, ...], a hybrid's) with each row's new K/V
    [B, L, KV, ...] (all layers) written at its slot (int [B]): one in-place update of L vectors per
    row and step, leaf by leaf for QuantKV (a bounded cache's slot positions: [B, L, S, KV])."""

    def write(c, n):
        def row(r, c):
            update = jnp.expand_dims(jax.lax.dynamic_index_in_dim(n, r, keepdims=False), (row_axis, 2))
            at = [0] * c.ndim
            at[row_axis], at[2] = r, slots[r]
            return jax.lax.dynamic_update_slice(c, update.astype(c.dtype), at)
        return jax.lax.fori_loop(0, c.shape[row_axis], row, c)

    return jax.tree.map(write, cache, new)
