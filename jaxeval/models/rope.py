"""Rotary position embeddings as Hugging Face computes them (half-split rotation, fp32 angles)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

from jaxeval.models.config import FULL, ModelConfig, RopeConfig


def inverse_frequencies(rope: RopeConfig, head_dim: int) -> np.ndarray:
    """float32 [head_dim // 2], with `linear` or `llama3` scaling applied."""
    exponents = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / head_dim
    inv_freq = (1.0 / (rope.theta ** exponents)).astype(np.float32)
    if rope.kind == "linear":
        return (inv_freq / rope.factor).astype(np.float32)
    if rope.kind == "llama3":
        low_wavelen = rope.original_max_position / rope.low_freq_factor
        high_wavelen = rope.original_max_position / rope.high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        scaled = np.where(wavelen > low_wavelen, inv_freq / rope.factor, inv_freq)
        smooth = (rope.original_max_position / wavelen - rope.low_freq_factor) / (
            rope.high_freq_factor - rope.low_freq_factor)
        smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return np.where(medium, smoothed, scaled).astype(np.float32)
    return inv_freq


def layer_inverse_frequencies(config: ModelConfig) -> np.ndarray:
    """float32 [layers, head_dim // 2]: each layer's rope (Gemma 3 uses a local base on sliding layers)."""
    full = inverse_frequencies(config.rope, config.head_dim)
    local = inverse_frequencies(config.rope_local, config.head_dim)
    return np.stack([full if t == FULL else local for t in config.layer_types])


def apply_rope(x, positions, inv_freq):
    """x: [B, T, heads, head_dim]; positions: int [T]; inv_freq: float32 [head_dim // 2]."""
    angles = positions.astype(jnp.float32)[:, None] * inv_freq[None, :]  # [T, hd/2]
    angles = jnp.concatenate([angles, angles], axis=-1)[None, :, None, :]
    cos, sin = jnp.cos(angles).astype(x.dtype), jnp.sin(angles).astype(x.dtype)
    half = x.shape[-1] // 2
    rotated = jnp.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin
