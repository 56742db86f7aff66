"""The attention mask every backend applies: which keys a query sees, and the value hidden scores get.

A query at absolute position q sees the key at position s when s <= q and, for a sliding-window
layer (window > 0), q - s < window (with attention sinks, also when s < sinks). Hidden scores are
set to MASK_VALUE, a large finite negative float32 (not -inf, so a row with no visible key gives
no NaN); merged partial softmaxes treat a log-sum-exp below half of it as "saw nothing".
"""

from __future__ import annotations

import jax.numpy as jnp

MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)


def visible(q_pos, k_pos, window, sinks=None):
    """q_pos int [T], k_pos int [S], window int scalar (0 = none) -> bool [T, S].

    sinks: None, or an int scalar: the first `sinks` positions stay visible outside the window
    (a StreamingLLM cache, jaxeval.models.kv_policy)."""
    diff = q_pos[:, None] - k_pos[None, :]
    recent = (window <= 0) | (diff < window)
    if sinks is not None:
        recent = recent | (k_pos[None, :] < sinks)
    return (diff >= 0) & recent
