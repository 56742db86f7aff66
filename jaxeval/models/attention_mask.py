"""The attention mask every backend applies: which keys a query sees, and the value hidden scores get.

A query at absolute position q sees the key at position s when s <= q and, for a sliding-window
layer (window > 0), q - s < window. Hidden scores are set to MASK_VALUE, a large finite negative
float32 (not -inf, so a row with no visible key gives no NaN); merged partial softmaxes treat a
log-sum-exp below half of it as "saw nothing".
"""

from __future__ import annotations

import jax.numpy as jnp

MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)


def visible(q_pos, k_pos, window):
    """q_pos int [T], k_pos int [S], window int scalar (0 = none) -> bool [T, S]."""
    diff = q_pos[:, None] - k_pos[None, :]
    return (diff >= 0) & ((window <= 0) | (diff < window))
