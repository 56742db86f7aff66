"""Rotary position embeddings, bit-compatible with transformers at every position.

Two places decide whether a read at position 100,000 matches the reference:

1. The inverse frequencies. transformers computes them in float32 torch ops (pow, reciprocal,
   multiply, ...), each rounded once to float32. We follow the same chain of operations with
   every float32 rounding at the same place, computing each power in float64 and rounding it once
   (numpy's float32 `**` is not correctly rounded on CPUs where numpy takes its AVX512 path: one
   float32 step off in a frequency near 1 is 2e-3 rad at 32k positions). The frequencies depend on
   the sequence length for `dynamic` and `longrope`; they are computed on the host for each read
   or decode step and passed to the jitted step as data, so nothing recompiles per length.
2. The angles. transformers forms `float32(position) * float32(inv_freq)` (one rounding) and takes
   cos/sin of that float32 angle. We form the same product elementwise (never a dot, which a TPU
   runs in bfloat16 passes) and reduce it modulo 2*pi exactly before cos/sin (`_reduce`), so the
   result does not depend on how a backend's cos/sin treat arguments near 1e5.

Layers without rope (SmolLM3's NoPE layers) get zero frequencies: cos 1, sin 0, an exact identity.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxeval.models.config import FULL, ModelConfig, RopeConfig

LENGTH_DEPENDENT = ("dynamic", "longrope")  # frequencies that depend on the sequence length

F32 = np.float32


class RopeTables(NamedTuple):
    """What a jitted step needs (a pytree): inv_freq float32 [..., L, rotary_dim // 2], scale float32 [..., L]."""
    inv_freq: np.ndarray
    scale: np.ndarray


def _pow(base, exponent) -> np.ndarray:
    """float32 base ** exponent, correctly rounded (float64, then one rounding).

    exponent: a float32 array, or a Python float that torch keeps in double (`tensor ** 1.016`).
    """
    exponent = np.asarray(exponent, F32) if isinstance(exponent, np.ndarray) else np.float64(exponent)
    return (np.asarray(base, F32).astype(np.float64) ** np.asarray(exponent, np.float64)).astype(F32)


def _recip(x) -> np.ndarray:
    """torch's `scalar / tensor` is reciprocal(tensor) * scalar: 1 / x rounded once."""
    return (F32(1) / np.asarray(x, F32)).astype(F32)


def _exponents(dim: int) -> np.ndarray:
    """torch.arange(0, dim, 2).float() / dim, in float32: [dim // 2]."""
    return (np.arange(0, dim, 2).astype(F32) / F32(dim)).astype(F32)


def _default(theta: float, dim: int) -> np.ndarray:
    return _recip(_pow(F32(theta), _exponents(dim)))


def _llama3(rope: RopeConfig, dim: int) -> np.ndarray:
    inv = _default(rope.theta, dim)
    low_wavelen = rope.original_max_position / rope.low_freq_factor  # python floats, as the reference
    high_wavelen = rope.original_max_position / rope.high_freq_factor
    wavelen = _recip(inv) * F32(2 * math.pi)
    factor = F32(rope.factor)
    scaled = np.where(wavelen > F32(low_wavelen), inv / factor, inv).astype(F32)
    smooth = ((_recip(wavelen) * F32(rope.original_max_position) - F32(rope.low_freq_factor))
              / F32(rope.high_freq_factor - rope.low_freq_factor)).astype(F32)
    smoothed = ((F32(1) - smooth) * scaled / factor + smooth * scaled).astype(F32)
    medium = ~(wavelen < F32(high_wavelen)) & ~(wavelen > F32(low_wavelen))
    return np.where(medium, smoothed, scaled).astype(F32)


def _yarn_correction_range(rope: RopeConfig, dim: int) -> tuple[float, float]:
    """The dimensions between full extrapolation (beta_fast rotations) and interpolation (beta_slow)."""
    def dim_of(rotations):
        return (dim * math.log(rope.original_max_position / (rotations * 2 * math.pi))) / (2 * math.log(rope.theta))

    low, high = dim_of(rope.beta_fast), dim_of(rope.beta_slow)
    if rope.truncate:
        low, high = math.floor(low), math.ceil(high)
    return max(low, 0), min(high, dim - 1)


def _yarn(rope: RopeConfig, dim: int) -> np.ndarray:
    pos_freqs = _pow(F32(rope.theta), _exponents(dim))
    extrapolation = _recip(pos_freqs)
    interpolation = _recip(F32(rope.factor) * pos_freqs)
    low, high = _yarn_correction_range(rope, dim)
    if low == high:
        high += 0.001  # the reference's guard against a zero-width ramp
    ramp = np.clip((np.arange(dim // 2, dtype=F32) - F32(low)) / F32(high - low), 0, 1).astype(F32)
    extrapolation_share = (F32(1) - ramp).astype(F32)
    return (interpolation * (F32(1) - extrapolation_share) + extrapolation * extrapolation_share).astype(F32)


def _dynamic(rope: RopeConfig, dim: int, seq_len: int) -> np.ndarray:
    """Dynamic NTK: the base grows with the sequence length past max_position_embeddings.

    The reference holds seq_len as a tensor, so the base is computed in float32 ops too.
    """
    seq_len = max(seq_len, rope.original_max_position)
    grown = (F32(rope.factor) * F32(seq_len) / F32(rope.original_max_position) - F32(rope.factor - 1)).astype(F32)
    base = (F32(rope.theta) * _pow(grown, dim / (dim - 2))).astype(F32)
    return _recip(_pow(base, _exponents(dim)))


def _longrope(rope: RopeConfig, dim: int, seq_len: int) -> np.ndarray:
    """Phi-3 LongRoPE: per-frequency factors, the long set once the sequence passes the original context."""
    factors = rope.long_factor if seq_len > rope.original_max_position else rope.short_factor
    return _recip(np.asarray(factors, F32) * _pow(F32(rope.theta), _exponents(dim)))


def inverse_frequencies(rope: RopeConfig, dim: int, seq_len: int = 0) -> np.ndarray:
    """float32 [dim // 2] for a rotary dimension `dim`; seq_len matters for LENGTH_DEPENDENT kinds only."""
    if rope.kind == "default":
        return _default(rope.theta, dim)
    if rope.kind == "linear":
        return (_default(rope.theta, dim) / F32(rope.factor)).astype(F32)
    if rope.kind == "llama3":
        return _llama3(rope, dim)
    if rope.kind == "yarn":
        return _yarn(rope, dim)
    if rope.kind == "dynamic":
        return _dynamic(rope, dim, seq_len)
    if rope.kind == "longrope":
        return _longrope(rope, dim, seq_len)
    raise ValueError(f"rope kind {rope.kind!r} has no frequencies")  # config.py refuses unknown kinds first


def _layer_ropes(config: ModelConfig) -> list[RopeConfig | None]:
    """Each layer's rope (None for a layer without rope)."""
    return [None if i in config.no_rope_layers else (config.rope if t == FULL else config.rope_local)
            for i, t in enumerate(config.layer_types)]


def length_dependent(config: ModelConfig) -> bool:
    return any(r is not None and r.kind in LENGTH_DEPENDENT for r in _layer_ropes(config))


def rope_key(config: ModelConfig, seq_len: int):
    """Equal keys mean equal tables: reads may share a prefix's KV cache only within one key."""
    if not length_dependent(config):
        return None
    return tuple(None if r is None or r.kind not in LENGTH_DEPENDENT else
                 (seq_len > r.original_max_position if r.kind == "longrope" else max(seq_len, r.original_max_position))
                 for r in _layer_ropes(config))


def rope_tables(config: ModelConfig, seq_len: int) -> RopeTables:
    """Per-layer tables for a sequence of seq_len tokens (transformers: max(position_ids) + 1)."""
    half = config.rotary_dim // 2
    inv_freq = np.zeros((config.num_layers, half), F32)
    scale = np.ones((config.num_layers,), F32)
    for i, rope in enumerate(_layer_ropes(config)):
        if rope is not None:
            inv_freq[i] = inverse_frequencies(rope, config.rotary_dim, seq_len)
            scale[i] = rope.attention_factor
    return RopeTables(inv_freq, scale)


def row_tables(config: ModelConfig, seq_lens) -> RopeTables:
    """Stacked tables for decode rows: [B, L, rotary_dim // 2] and [B, L], one sequence length per row."""
    if not length_dependent(config):
        one = rope_tables(config, 0)
        n = len(seq_lens)
        return RopeTables(np.broadcast_to(one.inv_freq, (n, *one.inv_freq.shape)).copy(),
                          np.broadcast_to(one.scale, (n, *one.scale.shape)).copy())
    tables = [rope_tables(config, int(s)) for s in seq_lens]
    return RopeTables(np.stack([t.inv_freq for t in tables]), np.stack([t.scale for t in tables]))


def _two_pi_digits(bits: int = 5, count: int = 8) -> tuple[tuple[np.float32, ...], np.float32]:
    """2*pi as `count` float32 digits of `bits` significant bits each, plus the float32 rest (~1e-12).

    With |k| < 2**(24 - bits) every product k * digit is exact in float32.
    """
    getcontext().prec = 60
    rest = Decimal("6.28318530717958647692528676655900576839433879875021164194988918")
    digits = []
    for _ in range(count):
        step = Decimal(2) ** (math.floor(math.log2(float(rest))) - bits + 1)
        digit = (rest / step).to_integral_value(rounding="ROUND_FLOOR") * step
        digits.append(F32(float(digit)))
        assert Decimal(float(digits[-1])) == digit  # exactly representable
        rest -= digit
    return tuple(digits), F32(float(rest))


_TWO_PI_DIGITS, _TWO_PI_REST = _two_pi_digits()
_EXACT_STEPS = 4  # a - k * (d1 + .. + d4) is exact in float32 (it fits 24 bits of d4's last place)
_INV_TWO_PI = F32(1 / (2 * math.pi))


def _reduce(angles):
    """float32 angles, |angle| < 2**19 * 2*pi (3.3M) -> (hi, lo) float32, hi + lo = angle mod 2*pi within 1e-9.

    Cody-Waite reduction in float32 only (a TPU has no float64): the first digits subtract exactly;
    the later ones are accumulated as a float-float pair (TwoSum keeps each rounding error in lo).
    """
    k = jnp.round(angles * _INV_TWO_PI)
    hi = angles
    for digit in _TWO_PI_DIGITS[:_EXACT_STEPS]:
        hi = hi - k * digit
    lo = jnp.zeros_like(hi)
    for digit in _TWO_PI_DIGITS[_EXACT_STEPS:]:
        part = -(k * digit)  # exact
        total = hi + part
        virtual = total - hi
        lo = lo + ((hi - (total - virtual)) + (part - virtual))  # TwoSum's rounding error
        hi = total
    return hi, lo - k * _TWO_PI_REST


def rotary_cos_sin(positions, inv_freq, scale):
    """positions int [T]; inv_freq float32 [R/2]; scale float32 scalar -> cos, sin float32 [T, R/2] (scaled)."""
    angles = positions.astype(jnp.float32)[:, None] * inv_freq[None, :]  # one float32 rounding, as the reference
    r, lo = _reduce(angles)
    cos, sin = jnp.cos(r), jnp.sin(r)  # r is within [-pi - 1e-6, pi + 1e-6]: every backend's accurate range
    return (cos - lo * sin) * scale, (sin + lo * cos) * scale  # cos(r + lo), sin(r + lo) to first order in lo


def apply_rope(x, cos, sin, interleaved: bool = False):
    """x [B, T, heads, head_dim]; cos, sin float32 [T, R/2] with R <= head_dim: rotate the first R dims.

    Half-split pairs (i, i + R/2) as Llama; interleaved pairs (2i, 2i + 1) as GLM. Dims past R pass.
    """
    rot = 2 * cos.shape[-1]
    if interleaved:
        cos, sin = jnp.repeat(cos, 2, axis=-1), jnp.repeat(sin, 2, axis=-1)
    else:
        cos, sin = jnp.concatenate([cos, cos], axis=-1), jnp.concatenate([sin, sin], axis=-1)
    cos, sin = cos[None, :, None, :].astype(x.dtype), sin[None, :, None, :].astype(x.dtype)
    part, rest = x[..., :rot], x[..., rot:]
    if interleaved:
        pairs = part.reshape(*part.shape[:-1], rot // 2, 2)
        rotated = jnp.stack([-pairs[..., 1], pairs[..., 0]], axis=-1).reshape(part.shape)
    else:
        rotated = jnp.concatenate([-part[..., rot // 2:], part[..., :rot // 2]], axis=-1)
    out = part * cos + rotated * sin
    return out if rest.shape[-1] == 0 else jnp.concatenate([out, rest], axis=-1)
