"""One sequence's decode step through the layers: the body generate's batched decode vmaps over rows."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.models.attention import decode_attention
from jaxeval.models.decoder import attention_inputs, embed_tokens, final_logits, layer_output, sink_logits
from jaxeval.models.kv_policy import attention_window, stored_kv
from jaxeval.models.layer_stacks import layer_stacks


def decode_row(params, cache_k, cache_v, token, position, rope, config, keep=None, slot=None, slot_positions=None):
    """One sequence, one token: token (int scalar) at `position`; cache [L, S, KV, hd] holding positions < position.

    rope: this row's RopeTables (inv_freq [L, R/2], scale [L]) for a sequence of position + 1 tokens.
    Each layer writes its K/V at `position` into the cache (carried through the layer scan, so the
    write is in place) and attends from it. keep: None, or this row's SnapKV mask [L, S, KV].
    A bounded cache (jaxeval.engine.bounded_kv): slot, the int slot the K/V go to (default: position),
    and slot_positions int [L, S, KV], the position each slot holds (this one's included).
    Returns (float32 logits [V] of the next token, cache).
    """
    windows = jnp.asarray(np.array(config.layer_windows, dtype=np.int32))
    positions = position + jnp.arange(1)
    policy = config.kv_cache
    write_at = position if slot is None else slot
    bounded = {} if slot_positions is None else {"slot_positions": slot_positions, "block_k": cache_k.shape[1]}

    def layer(carry, xs, stack_config):
        x, cache_k, cache_v = carry
        lp, inv_freq, scale, window, i = xs
        q, k, v = attention_inputs(lp, stack_config, x, positions, (inv_freq, scale))  # [1, 1, H or KV, hd]
        cache_k, cache_v = (jax.tree.map(lambda c, n: jax.lax.dynamic_update_slice(c, n.astype(c.dtype),
                                                                                   (i, write_at, 0, 0)),
                                         cache, stored_kv(policy, new)) for cache, new in ((cache_k, k), (cache_v, v)))
        window, sinks = attention_window(policy, window)
        values = cache_k if config.mla is not None else cache_v  # latent attention: the values are the keys
        attn = decode_attention(q[0, 0], cache_k, values, i, position, window, config.attention_scale,
                                config.attn_logit_softcap, keep=keep, sink_logits=sink_logits(lp, config), **sinks,
                                **bounded)
        return (layer_output(lp, stack_config, x, attn[None, None]), cache_k, cache_v), None

    x = embed_tokens(params, config, token[None, None])
    carry = (x, cache_k, cache_v)
    for stack in layer_stacks(config):  # the cache and the per-layer tables are indexed by the model's layer
        rows = stack.rows
        xs = (params[stack.name], rope.inv_freq[rows], rope.scale[rows], windows[rows],
              jnp.arange(config.num_layers)[rows])
        carry, _ = jax.lax.scan(functools.partial(layer, stack_config=stack.config), carry, xs)
    x, cache_k, cache_v = carry
    return final_logits(params, config, x[0, 0]), cache_k, cache_v
