"""KV-cache policies, piece by piece: settings, quantized storage, sink masks, SnapKV's selection (numpy references)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxeval.errors import ConfigError
from jaxeval.models.attention import chunked_attention, xla_attention
from jaxeval.models.decode_attention import decode_attention
from jaxeval.models.kv_policy import (KVPolicy, check_read, check_supported, dense_kv, from_flags, quantize_kv,
                                     snapkv_keep)


def test_flags_make_named_policies_and_refuse_what_does_not_apply():
    assert from_flags(None) is None and from_flags("exact") is None
    assert from_flags("int8").label == "int8"
    assert from_flags("streaming", sinks=2, window=64).label == "streaming:sinks=2,window=64,positions=original"
    assert from_flags("snapkv", budget=256).label == "snapkv:budget=256,window=32,kernel=7,pool=max"
    for kind, given, words in (("int8", {"budget": 5}, "--kv_budget applies to --kv_cache snapkv"),
                               ("exact", {"sinks": 4}, "--kv_sinks applies to --kv_cache streaming"),
                               ("int4", {}, "is not a KV-cache policy"),
                               ("snapkv", {"budget": 32}, "must exceed the observation window"),
                               ("snapkv", {"kernel": 4}, "must be odd"),
                               ("streaming", {"window": 0}, "window must be an integer >= 1")):
        with pytest.raises(ConfigError, match=words):
            from_flags(kind, **given)


def test_unsupported_runs_are_refused_with_one_message():
    config = dataclasses.make_dataclass("C", [("linear_attention", object), ("model_type", str)])
    dense, hybrid = config(None, "llama"), config(object(), "qwen3_5")
    with pytest.raises(ConfigError, match="hybrid"):
        check_supported(KVPolicy("int8"), hybrid, None, "chunked")
    with pytest.raises(ConfigError, match="mesh"):
        check_supported(KVPolicy("fp8"), dense, "data=2", "chunked")
    with pytest.raises(ConfigError, match="attention='splash'.*use xla or chunked"):
        check_supported(from_flags("streaming"), dense, None, "splash")
    check_supported(from_flags("snapkv"), dense, None, "splash")  # decode attention is every backend's
    with pytest.raises(ConfigError, match="teacher-forced reads"):
        check_read(from_flags("snapkv"))


def _numpy_codes(x: np.ndarray, kind: str):
    amax = np.abs(x).max(-1, keepdims=True)
    top = np.float32(127.0 if kind == "int8" else 448.0)
    scale = np.where(amax > 0, amax * np.float32(1 / top), np.float32(1)).astype(np.float32)
    y = np.clip(x / scale, -top, top)
    codes = np.round(y).astype(np.int8) if kind == "int8" else y.astype(ml_dtypes.float8_e4m3fn)
    return codes, scale


@pytest.mark.parametrize("kind", ["int8", "fp8"])
def test_quantized_storage_is_per_token_and_head_absmax_within_half_a_step(kind):
    x = (np.random.default_rng(1).standard_normal((3, 5, 2, 16)) * np.array([0.01, 3.0])[:, None]).astype(np.float32)
    x[0, 0, 0] = 0.0  # an all-zero vector: scale 1, codes 0
    stored = quantize_kv(jnp.asarray(x), kind)
    codes, scale = _numpy_codes(x, kind)
    assert stored.codes.dtype == (jnp.int8 if kind == "int8" else jnp.uint8)  # fp8: float8_e4m3fn's bits
    assert stored.scale.shape == (3, 5, 2, 1)
    np.testing.assert_array_equal(np.asarray(stored.scale), scale)
    got = np.asarray(stored.codes) if kind == "int8" else np.asarray(stored.codes).view(ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(got.astype(np.float32), codes.astype(np.float32))
    rebuilt = np.asarray(dense_kv(stored, jnp.float32))
    # half a step: scale / 2 for int8; e4m3 has 3 mantissa bits, 2**-4 relative (and 2**-10 * scale near zero)
    bound = scale / 2 if kind == "int8" else np.maximum(np.abs(x) * 2.0 ** -4, scale * 2.0 ** -10)
    assert np.all(np.abs(rebuilt - x) <= bound * (1 + 1e-6))
    assert np.all(rebuilt[0, 0, 0] == 0)


def _masked_reference(q, k, v, q_start, window, sinks, keep=None):
    """numpy float64 attention: q [T, H, d], k, v [S, KV, d]; keep bool [S, KV] or None."""
    t, h, d = q.shape
    s_len, kv = k.shape[:2]
    g = h // kv
    qp, kp = q_start + np.arange(t)[:, None], np.arange(s_len)[None, :]
    seen = (kp <= qp) & ((window <= 0) | (qp - kp < window) | (kp < sinks))
    out = np.zeros((t, h, d))
    for head in range(h):
        scores = q[:, head].astype(np.float64) @ k[:, head // g].T.astype(np.float64) / np.sqrt(d)
        mask = seen if keep is None else seen & keep[None, :, head // g]
        scores = np.where(mask, scores, -np.inf)
        p = np.exp(scores - scores.max(-1, keepdims=True))
        out[:, head] = (p / p.sum(-1, keepdims=True)) @ v[:, head // g]
    return out


def test_sinks_and_window_in_every_attention_path_equal_a_masked_reference():
    rng = np.random.default_rng(2)
    t, h, kv, d = 96, 4, 2, 8
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((1, t, h, d), (1, t, kv, d), (1, t, kv, d)))
    window, sinks, scale = jnp.int32(20), jnp.int32(5), d ** -0.5
    want = _masked_reference(q[0], k[0], v[0], 0, 20, 5)
    got_xla = xla_attention(*map(jnp.asarray, (q, k, v)), 0, window, scale, sinks=sinks)
    got_chunked = chunked_attention(*map(jnp.asarray, (q, k, v)), 0, window, scale, block_q=16, block_k=16, sinks=sinks)
    for got in (got_xla, got_chunked):
        np.testing.assert_allclose(np.asarray(got)[0], want, atol=2e-5)
    stacked_k, stacked_v = jnp.asarray(k), jnp.asarray(v)  # one layer: [L=1, S, KV, d]
    for position in (3, 40, 95):  # inside the window, past the sinks' block, the last
        got = decode_attention(jnp.asarray(q[0, position]), stacked_k, stacked_v, 0, position, window, scale,
                               block_k=16, sinks=sinks)
        np.testing.assert_allclose(np.asarray(got), want[position], atol=2e-5)
    keep = rng.random((t, kv)) < 0.5
    keep[60:] = True
    got = decode_attention(jnp.asarray(q[0, 90]), stacked_k, stacked_v, 0, 90, jnp.int32(0), scale, block_k=16,
                           keep=jnp.asarray(keep[None]))
    np.testing.assert_allclose(np.asarray(got), _masked_reference(q[0, 90:91], k[0], v[0], 90, 0, 0, keep)[0],
                               atol=2e-5)


def _numpy_selection(votes: np.ndarray, prefix: int, budget: int, window: int, kernel: int, pool: str) -> np.ndarray:
    """SnapKV's vote as its torch code computes it (pool1d over the prefix, padded), ties to the earlier position."""
    kv = votes.shape[0]
    half = kernel // 2
    fill = -np.inf if pool == "max" else 0.0
    padded = np.concatenate([np.full((kv, half), fill), votes[:, :prefix], np.full((kv, half), fill)], axis=1)
    windows = np.stack([padded[:, i:i + kernel] for i in range(prefix)], axis=1)
    pooled = windows.max(-1) if pool == "max" else windows.sum(-1) / kernel
    keep = np.zeros((kv, votes.shape[1]), bool)
    for head in range(kv):
        keep[head, np.argsort(-pooled[head], kind="stable")[:budget - window]] = True
    keep[:, prefix:] = True
    return keep.T


@pytest.mark.parametrize("pool", ["max", "avg"])
def test_snapkv_selection_equals_a_numpy_reference(pool):
    rng = np.random.default_rng(3)
    votes = rng.random((2, 64)).astype(np.float32) ** 3
    votes[:, 50:] = 0.0  # the slots past the prefix carry no votes
    policy = KVPolicy("snapkv", budget=20, window=8, kernel=5, pool=pool)
    got = np.asarray(snapkv_keep(jnp.asarray(votes), 50, policy, jnp.int32(0)))
    np.testing.assert_array_equal(got, _numpy_selection(votes.astype(np.float64), 50, 20, 8, 5, pool))
    assert got[:50].sum(0).tolist() == [12, 12]
    assert np.asarray(snapkv_keep(jnp.asarray(votes), 50, policy, jnp.int32(16))).all()  # a sliding layer keeps all
