"""`cudnn` attention backend: jax.nn.dot_product_attention(implementation="cudnn"), GPU only.

cuDNN flash attention takes bfloat16/float16, head_dim a multiple of 8 (at most 256 on Hopper),
a causal mask aligned at the top-left corner and a left sliding window; it has no logit
soft-capping (the registry refuses such models before compile and names the backends that
have it). A prefill chunk at a traced cache offset is split by jaxeval.models.attention_parts:
a causal (or banded) call over the chunk's own keys, and a history call over the keys before
the offset (full layers: key_value_seq_lengths = offset, so cuDNN skips the blocks past it;
sliding layers: the last window - 1 keys with a small [T, window - 1] mask), merged by the
log-sum-exps cuDNN returns (return_residual=True).

Precision note: jax.nn.dot_product_attention returns the log-sum-exp in the activation dtype,
so the merge of a multi-chunk prefill carries bfloat16 rounding in its weights (about 0.4% per
weight). A chunk covering the whole cache (prefill_chunk >= the length bucket) is one exact call.

implementation="xla" runs the same decomposition through jax's XLA path on any platform (tests).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxeval.errors import ConfigError
from jaxeval.models.attention_parts import offset_attention, on_mesh, static_windows, with_static_window


def _part(q, k, v, kind, window, valid, *, scale, implementation):
    """One dot_product_attention call -> (out [B, T, H, hd], lse [B, T, H])."""
    b, t = q.shape[:2]
    kwargs = {}
    if kind == "diagonal":
        kwargs = dict(is_causal=True, local_window_size=(window - 1, 0) if window else None)
    elif kind == "history":  # valid = keys before the offset: a prefix, so a length
        kwargs = dict(key_value_seq_lengths=jnp.full((b,), jnp.sum(valid), jnp.int32))
    else:  # window_history: key j at position start - S' + j, visible to query i when i + S' - j < window
        s = k.shape[1]
        band = (jnp.arange(t)[:, None] + s - jnp.arange(s)[None, :]) < window
        kwargs = dict(mask=(band & valid[None, :])[None, None])
    out, lse = jax.nn.dot_product_attention(q, k, v, scale=scale, implementation=implementation,
                                            return_residual=True, **kwargs)
    return out, lse


def cudnn_attention(q, k, v, q_start, window, scale, softcap=None, *, windows=None, implementation="cudnn",
                    sink_logits=None):
    """Causal attention: q [B, T, H, hd] at positions q_start + t; k, v [B, S, KV, hd].

    window: Python int, or a traced scalar taking one of `windows` (the model's layer windows).
    sink_logits: None, or float [H] (gpt-oss), folded in through the returned log-sum-exp.
    """
    if softcap:
        raise ConfigError(f"attention='cudnn' has no logit soft-capping (attn_logit_softcap={softcap}); "
                          "use chunked, xla or splash (TPU)")
    part = functools.partial(_part, scale=scale, implementation=implementation)
    return with_static_window(windows, window,
                              lambda w: offset_attention(part, q, k, v, q_start, w, sink_logits=sink_logits))


def make_cudnn_attention(config=None, mesh=None, implementation="cudnn"):
    """attend(q, k, v, q_start, window, scale, softcap) for `config`'s layer windows; local arrays, or
    global ones run per shard under shard_map when a jaxeval mesh is given."""
    return on_mesh(functools.partial(cudnn_attention, windows=static_windows(config), implementation=implementation),
                   mesh)
