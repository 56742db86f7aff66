"""The bounded decode caches of --kv_cache streaming and snapkv (jaxeval/engine/bounded_kv.py) against the
masked form over the full cache (generate(..., bounded_kv=False)): the same greedy tokens, every step's
log-probs within float32 noise (5e-5), and a cache whose arrays the policy bounds.

Both runs' per-step logits are captured where generate samples (choose_tokens, through an ordered
jax.debug.callback); the bounded run's first token comes from one row at a time, the later ones batched.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxeval.engine import bounded_kv, kv_cache
from jaxeval.engine.generate import generate
from jaxeval.models.config import FULL, SLIDING
from jaxeval.models.kv_policy import KVPolicy
from test_kv_cache_policies import IDS, tiny, with_policy

PROMPTS = [IDS[:90], IDS[100:130], IDS[200:205]]  # past the policies' bounds, around them, and short
NEW = 10


@pytest.fixture
def captured(monkeypatch):
    """A list of (logits [B, V], positions [B]) per sampling call, in dispatch order; the decode steps'
    jit caches are cleared so that the patched choose_tokens is traced in."""
    calls: list[tuple[np.ndarray, np.ndarray]] = []
    real = kv_cache.choose_tokens

    def recording(logits, keys, positions, temperature, top_p):
        jax.debug.callback(lambda lg, ps: calls.append((np.asarray(lg), np.asarray(ps))), logits, positions,
                           ordered=True)
        return real(logits, keys, positions, temperature, top_p)

    steps = (kv_cache.decode_step, bounded_kv.decode_step_bounded)
    for module in (kv_cache, bounded_kv):
        monkeypatch.setattr(module, "choose_tokens", recording)
    for step in steps:
        step.clear_cache()
    yield calls
    monkeypatch.undo()
    for step in steps:
        step.clear_cache()


def _steps(calls, rows: int, bounded: bool) -> np.ndarray:
    """log-softmax [steps, rows, V] of the real rows from the captured calls."""
    if bounded:  # the first token one row at a time (the padded batch's rows), then batched steps
        b = len(calls) - NEW + 1
        calls = [(np.concatenate([c[0] for c in calls[:b]]), None)] + calls[b:]
    logits = np.stack([c[0][:rows] for c in calls]).astype(np.float64)
    return logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - \
        logits.max(-1, keepdims=True)


def _compare(params, config, policy, captured, spy_cache):
    runtime = with_policy(policy, 32)
    masked = generate(params, config, runtime, PROMPTS, NEW, eos_token_ids=[], bounded_kv=False)
    want = _steps(captured, len(PROMPTS), bounded=False)
    captured.clear()
    bounded = generate(params, config, runtime, PROMPTS, NEW, eos_token_ids=[])
    got = _steps(captured, len(PROMPTS), bounded=True)
    assert [g.tokens for g in bounded] == [g.tokens for g in masked]
    assert got.shape == want.shape == (NEW, len(PROMPTS), config.vocab_size)
    # float32 noise only: the masked reference prefills its rows in one batched step (prefill_rows), the
    # bounded path each prompt alone, so the two sum in different orders (measured 1.5e-5 at most)
    assert np.abs(got - want).max() <= 5e-5
    return spy_cache()


@pytest.fixture
def spy_cache(monkeypatch):
    """() -> the bounded cache the last generate decoded from (what decode_step_bounded was last given)."""
    seen = []
    real = bounded_kv.decode_step_bounded

    def spy(params, cache, *args, **kwargs):
        seen.append(jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), (cache.k, cache.v, cache.slot_pos)))
        return real(params, cache, *args, **kwargs)

    monkeypatch.setattr(bounded_kv, "decode_step_bounded", spy)
    return lambda: seen[-1]


def _exact_bytes(config, rows=4):  # the masked form's cache: length_bucket(90 + 10 - 1) = 128 slots
    return 2 * rows * config.num_layers * 128 * config.num_kv_heads * config.head_dim * 4


def test_streaming_bounded_cache_generates_as_the_masked_one(captured, spy_cache):
    config, params = tiny(seed=2)
    k, v, slots = _compare(params, config, KVPolicy("streaming", sinks=3, window=24), captured, spy_cache)
    assert k.shape == v.shape == (4, config.num_layers, 3 + 24, config.num_kv_heads, config.head_dim)
    assert slots.shape == (4, config.num_layers, 27, config.num_kv_heads) and slots.dtype == np.int32
    held = bounded_kv.cache_bytes((k, v, slots))
    assert held / _exact_bytes(config) < 27 / 128 * (1 + 1 / config.head_dim) + 1e-9


def test_snapkv_bounded_cache_generates_as_the_masked_one(captured, spy_cache):
    config, params = tiny(seed=3)
    k, v, slots = _compare(params, config, KVPolicy("snapkv", budget=40, window=8, kernel=5, pool="max"), captured,
                           spy_cache)
    assert k.shape == (4, config.num_layers, 40 + NEW - 1, config.num_kv_heads, config.head_dim)
    assert bounded_kv.cache_bytes((k, v, slots)) < 0.42 * _exact_bytes(config)


@pytest.mark.slow
def test_sliding_window_layers_keep_their_own_window_in_the_bounded_cache(captured, spy_cache):
    """Mistral-style sliding layers (window 20) keep their window under both policies: the ring (streaming,
    window 12) and the compacted prompt (snapkv, budget 16) grow to hold it."""
    base, params = tiny(seed=5)
    config = dataclasses.replace(base, layer_types=(SLIDING, FULL), sliding_window=20)
    assert config.layer_windows == (20, 0)
    k, _, _ = _compare(params, config, KVPolicy("streaming", sinks=2, window=12), captured, spy_cache)
    assert k.shape[2] == 2 + 20
    captured.clear()
    k, _, _ = _compare(params, config, KVPolicy("snapkv", budget=16, window=4, kernel=3, pool="avg"), captured,
                       spy_cache)
    assert k.shape[2] == 20 + NEW - 1
