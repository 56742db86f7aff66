"""Weight-only quantization (jaxeval/models/quant.py): codes, packing, error bounds, jit and scan."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxeval.models import quant


def _weight(shape, seed=0):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.02, shape).astype(np.float32)
    w[..., 0] *= 40  # an outlier channel, as trained weights have
    return w


def test_int4_packing_round_trips_every_code():
    codes = np.arange(16, dtype=np.uint8).repeat(6).reshape(16 * 6 // 4, 4)  # [24, 4], every code
    packed = quant.pack_int4(codes)
    assert packed.shape == (12, 4) and packed.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(quant.unpack_int4(jnp.asarray(packed))), codes)
    assert packed[0, 0] == codes[0, 0] | (codes[1, 0] << 4)  # row 2i low nibble, 2i+1 high


@pytest.mark.parametrize("name,shape", [("wq", (64, 4, 16)), ("wo", (4, 16, 64)), ("w_down", (96, 64))])
def test_int8_per_channel_error_is_at_most_half_a_step(name, shape):
    w = _weight(shape)
    qw = quant.quantize(w, "int8", quant.contraction_dims(name))
    back = np.asarray(quant.dense_weight(qw, jnp.float32))
    assert back.shape == w.shape and qw.q.dtype == np.int8
    step = np.broadcast_to(qw.scale, w.shape)
    assert np.all(np.abs(back - w) <= step / 2 * (1 + 1e-6))
    assert np.abs(back - w).max() > 0  # it is really quantized
    # one scale per output channel: the contraction dims are reduced
    assert qw.scale.shape == (1,) + shape[quant.contraction_dims(name):]


@pytest.mark.parametrize("name,shape,group", [("wq", (256, 2, 8), 128), ("wo", (4, 32, 48), 64), ("w_up", (64, 40), 32)])
def test_int4_per_group_error_is_at_most_half_a_step(name, shape, group):
    w = _weight(shape, seed=1)
    n_contract = quant.contraction_dims(name)
    qw = quant.quantize(w, "int4", n_contract, group)
    n_in = int(np.prod(shape[:n_contract]))
    assert qw.q.shape == (n_in // 2,) + shape[n_contract:] and qw.scale.shape == (n_in // group,) + shape[n_contract:]
    back = np.asarray(quant.dense_weight(qw, jnp.float32))
    step = np.repeat(qw.scale, group, axis=0).reshape(shape)
    assert np.all(np.abs(back - w) <= step / 2 * (1 + 1e-6))
    assert quant.param_bytes(qw) < w.nbytes / 5  # 4 bits + a float32 scale per group


def test_int4_with_checkpoint_zero_points():
    """Asymmetric codes as GPTQ/AWQ store them: w = (q - zero) * scale, zero per group and channel."""
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 16, (64, 8)).astype(np.uint8)
    scale = rng.uniform(0.01, 0.02, (2, 8)).astype(np.float32)
    zero = rng.integers(0, 16, (2, 8)).astype(np.uint8)
    qw = quant.Quantized(quant.pack_int4(codes), scale, zero, "int4", (64,))
    expected = (codes.reshape(2, 32, 8).astype(np.float32) - zero[:, None]) * scale[:, None]
    np.testing.assert_allclose(np.asarray(quant.dense_weight(qw, jnp.float32)), expected.reshape(64, 8), rtol=1e-7)


def test_fp8_relative_error_and_block_scales():
    w = _weight((64, 48), seed=3)
    qw = quant.quantize(w, "fp8", 1)
    back = np.asarray(quant.dense_weight(qw, jnp.float32))
    normal = np.abs(w / qw.scale) >= 2.0 ** -6  # e4m3's normal range: 3 mantissa bits, half a step 2**-4
    assert np.all(np.abs(back - w)[normal] <= np.abs(w)[normal] * 2.0 ** -4)
    # block scales (128 x 128 tiles in DeepSeek-V3 checkpoints; 16 x 32 here, with a partial last tile)
    codes = jnp.asarray(np.random.default_rng(4).normal(0, 50, (40, 48))).astype(jnp.float8_e4m3fn)
    tiles = np.random.default_rng(5).uniform(0.5, 2, (3, 2)).astype(np.float32)
    blocked = quant.Quantized(np.asarray(codes), tiles, None, "fp8", (40,), block=(16, 32))
    expected = np.asarray(codes.astype(jnp.float32)) * np.repeat(np.repeat(tiles, 16, 0)[:40], 32, 1)[:, :48]
    np.testing.assert_array_equal(np.asarray(quant.dense_weight(blocked, jnp.float32)), expected)


def test_quantized_weights_stack_and_scan_under_jit():
    """A stacked Quantized weight slices per layer in lax.scan and dequantizes inside the jitted body."""
    ws = [_weight((32, 2, 8), seed=s) for s in range(3)]
    for kind in quant.KINDS:
        stacked = quant.stack([quant.quantize(w, kind, 1, 16) for w in ws])

        @jax.jit
        def run(x, stacked=stacked):
            def body(h, lw):
                return h, jnp.einsum("d,dhk->hk", h, quant.dense_weight(lw, jnp.float32))
            return jax.lax.scan(body, x, stacked)[1]

        x = jnp.ones((32,), jnp.float32)
        got = np.asarray(run(x))
        want = np.stack([np.einsum("d,dhk->hk", np.ones(32, np.float32),
                                   np.asarray(quant.dense_weight(quant.quantize(w, kind, 1, 16), jnp.float32)))
                         for w in ws])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_bad_requests_name_the_problem():
    with pytest.raises(ValueError, match="quantize='int3' is not supported"):
        quant.quantize(np.zeros((4, 4)), "int3", 1)
    with pytest.raises(ValueError, match="groups of 128 rows do not divide the 96 input rows"):
        quant.quantize(np.zeros((96, 4)), "int4", 1, 128)
