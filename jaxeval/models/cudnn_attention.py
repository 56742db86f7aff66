"""`cudnn` attention backend: jax.nn.dot_product_attention(implementation="cudnn"), GPU only.

cuDNN flash attention takes bfloat16/float16, head_dim a multiple of 8 (at most 256 on Hopper),
a causal mask aligned at the top-left corner and a left sliding window; it has no logit
soft-capping (the registry refuses such models before compile and names the backends that
have it). A prefill chunk at a traced cache offset is split by jaxeval.models.attention_parts:
a causal (or banded) call over the chunk's own keys, and a history call over the keys before
the offset (full layers: key_value_seq_lengths = offset, so cuDNN skips the blocks past it;
sliding layers: the last window - 1 keys with a small [T, window - 1] mask), merged by the
log-sum-exps cuDNN returns (return_residual=True).

Precision: cuDNN computes the softmax statistics (the log-sum-exp) in float32, but
jax.nn.dot_product_attention casts them to the activation dtype before returning them. Rounded to
bfloat16, a log-sum-exp near 10 is off by up to 0.03, so each merge weight exp(lse_part - lse) of a
multi-chunk prefill was off by up to 3% (0.4% measured on random scores). The parts here therefore call
the cuDNN op jax.nn wraps (jax._src.cudnn.fused_attention_stablehlo.dot_product_attention; a private
module, checked against jax 0.10.2 only) and keep its float32 statistics; `_cudnn_op` checks its
keywords once, and where a JAX release has moved or changed that op it falls back to jax.nn (bfloat16
statistics) with one warning naming the cause.

implementation="xla" runs the same decomposition through jax's XLA path on any platform (tests).
"""

from __future__ import annotations

import functools
import inspect
import logging

import jax
import jax.numpy as jnp

from jaxeval.errors import ConfigError
from jaxeval.models.attention_parts import offset_attention, on_mesh, static_windows, with_static_window


def _part(q, k, v, kind, window, valid, *, scale, implementation):
    """One dot_product_attention call -> (out [B, T, H, hd], lse [B, T, H]; float32 from cuDNN)."""
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
    op = _cudnn_op() if implementation == "cudnn" else None
    if op is not None:
        return _float32_statistics(op, q, k, v, scale=scale, **kwargs)
    out, lse = jax.nn.dot_product_attention(q, k, v, scale=scale, implementation=implementation,
                                            return_residual=True, **kwargs)
    return out, lse


_MASK_TYPES = {(False, False): "NO_MASK", (False, True): "CAUSAL", (True, False): "PADDING",
               (True, True): "PADDING_CAUSAL"}  # (key lengths given, causal) -> MaskType, as jax.nn chooses
_OP_KEYWORDS = {"mask", "q_seqlen", "kv_seqlen", "scale", "mask_type", "sliding_window_length", "return_residual"}
log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=1)
def _cudnn_op():
    """(op, MaskType) of the cuDNN attention op under jax.nn.dot_product_attention, or None (with one warning)
    where this JAX has no such op with the keywords _float32_statistics passes."""
    try:
        from jax._src.cudnn import fused_attention_stablehlo as fa

        missing = _OP_KEYWORDS - set(inspect.signature(fa.dot_product_attention).parameters)
        if missing or not all(hasattr(fa.MaskType, m) for m in _MASK_TYPES.values()):
            raise AttributeError(f"its dot_product_attention lacks {sorted(missing) or 'a MaskType'}")
    except (ImportError, AttributeError, ValueError) as e:
        log.warning("cudnn attention: jax %s's cuDNN op is not where jaxeval expects it (%s); using "
                    "jax.nn.dot_product_attention, whose bfloat16 log-sum-exp rounds multi-chunk merges",
                    jax.__version__, e)
        return None
    return fa.dot_product_attention, fa.MaskType


def _float32_statistics(op, q, k, v, *, scale, is_causal=False, local_window_size=None, key_value_seq_lengths=None,
                        mask=None):
    """What jax.nn.dot_product_attention(implementation="cudnn", return_residual=True) computes, the same
    mask arguments mapped to the op's as jax.nn maps them, with the log-sum-exp left float32 [B, T, H]."""
    attention, mask_types = op
    padded = key_value_seq_lengths is not None  # jax.nn pairs kv lengths with full query lengths
    q_lengths = jnp.full((q.shape[0],), q.shape[1], jnp.int32) if padded else None
    kind = _MASK_TYPES[padded, is_causal]
    window = None if local_window_size is None else local_window_size[0] + 1  # causal parts only (see _part)
    out, stats = attention(q, k, v, None, mask, q_lengths, key_value_seq_lengths, scale=scale,
                           mask_type=getattr(mask_types, kind), sliding_window_length=window, return_residual=True)
    return out, jnp.transpose(stats, (0, 2, 1)).astype(jnp.float32)  # the op's [B, H, T] -> [B, T, H]


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
