"""The online softmax's pieces shared by the prefill (jaxeval.models.attention) and decode
(jaxeval.models.decode_attention) attentions: the running (max, sum, accumulator) before the first key
block, and the sink logits as rows of a KV group."""

from __future__ import annotations

import jax.numpy as jnp

from jaxeval.models.attention_mask import MASK_VALUE


def head_rows(sink_logits, num_kv):
    """sink_logits [H] -> float32 [KV, G], query head h = kv * G + g (the grouping of _group)."""
    return sink_logits.astype(jnp.float32).reshape(num_kv, -1)


def online_init(shape, d, sink=None):
    """(running max, sum, accumulator) before the first key block; with a sink logit float32 `shape`, the sink
    as if already seen: max = sink, sum = exp(sink - max) = 1, no value."""
    if sink is None:
        return (jnp.full(shape, MASK_VALUE, jnp.float32), jnp.zeros(shape, jnp.float32),
                jnp.zeros(shape + (d,), jnp.float32))
    return jnp.broadcast_to(sink, shape), jnp.ones(shape, jnp.float32), jnp.zeros(shape + (d,), jnp.float32)
