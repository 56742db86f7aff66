"""KV-cache policies through the engine (chunked reads, batched generation) against independent references.

The reference runs the whole sequence at once, layer by layer, with the model's own projections
and a numpy float64 attention under the policy's mask, keys and values quantized by numpy.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from jaxeval.api import load_model
from jaxeval.cli import EMBEDDED_MODEL
from jaxeval.engine.generate import generate
from jaxeval.engine.kv_cache import KVCache, prefill_rows
from jaxeval.engine.read import read
from jaxeval.engine.runtime import Runtime
from jaxeval.engine.snapkv import snapkv_masks
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import attention_inputs, embed_tokens, final_logits, layer_output
from jaxeval.models.kv_policy import KVPolicy
from jaxeval.models.param_layout import param_shapes
from jaxeval.models.rope import rope_tables

# The embedded model's read of 300 tokens with an int8 / fp8 cache against the exact one: an int8
# step is 1/254 of a vector's largest entry, an e4m3 step 2**-4 of the entry itself (about 16x
# coarser); measured, the largest log-prob change over the 299 positions is 0.034 (int8) and 0.33
# (fp8), the mean 0.004 and 0.023. Bounds at 3x the measured largest change.
EXACT_TOLERANCE = {"int8": 0.1, "fp8": 1.0}
REFERENCE_TOLERANCE = 2e-3  # same quantization, other summation order: a code may flip at a rounding boundary


def tiny(seed=0):
    raw = dict(model_type="llama", vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048, rope_theta=10000.0,
               eos_token_id=2)
    config = config_from_hf(raw)
    rng = np.random.default_rng(seed)

    def draw(path, shape):
        name = jax.tree_util.keystr(path)
        if "norm" in name:
            return 1.0 + 0.3 * rng.standard_normal(shape)
        return (1.0 if "embed" in name else 2 / math.sqrt(config.hidden_size)) * rng.standard_normal(shape)

    params = jax.tree_util.tree_map_with_path(lambda p, s: jnp.asarray(draw(p, s), jnp.float32), param_shapes(config),
                                              is_leaf=lambda x: isinstance(x, tuple))
    return config, params


def fake_quantized(x: np.ndarray, kind: str) -> np.ndarray:
    """numpy: x [..., hd] float32 through codes with a float32 absmax scale per vector, and back."""
    top = np.float32(127.0 if kind == "int8" else 448.0)
    amax = np.abs(x).max(-1, keepdims=True)
    scale = np.where(amax > 0, amax * np.float32(1 / top), np.float32(1)).astype(np.float32)
    y = np.clip(x / scale, -top, top)
    codes = np.round(y) if kind == "int8" else y.astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return codes.astype(np.float32) * scale


def reference_logits(params, config, ids, *, quant=None, visible=None, capture=None):
    """float32 logits [T, V] of ids [T]: whole-sequence layers, numpy float64 attention.

    visible(layer) -> bool [KV, T, T] (None: causal); quant: int8 | fp8 applied to every key and
    value; capture: a list that gets (q, k) [T, heads, hd] of every layer."""
    t = len(ids)
    rope = rope_tables(config, t)
    x = embed_tokens(params, config, jnp.asarray(ids)[None])
    kv, g = config.num_kv_heads, config.num_heads // config.num_kv_heads
    causal = np.tril(np.ones((t, t), bool))
    for layer in range(config.num_layers):
        lp = jax.tree.map(lambda a: a[layer], params["layers"])
        q, k, v = (np.asarray(a[0]) for a in attention_inputs(lp, config, x, jnp.arange(t),
                                                              (rope.inv_freq[layer], rope.scale[layer])))
        if capture is not None:
            capture.append((q, k))
        if quant:
            k, v = fake_quantized(k, quant), fake_quantized(v, quant)
        seen = np.broadcast_to(causal, (kv, t, t)) if visible is None else visible(layer)
        out = np.zeros(q.shape)
        for head in range(config.num_heads):
            scores = q[:, head].astype(np.float64) @ k[:, head // g].T.astype(np.float64) * config.attention_scale
            scores = np.where(seen[head // g], scores, -np.inf)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            out[:, head] = (p / p.sum(-1, keepdims=True)) @ v[:, head // g].astype(np.float64)
        x = layer_output(lp, config, x, jnp.asarray(out[None], jnp.float32))
    return np.asarray(final_logits(params, config, x[0]))


def log_softmax(logits):
    return logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(
        -1, keepdims=True)


def with_policy(policy, chunk=64):
    """The float32 Runtime of a generation or read under the KV-cache policy (None: exact)."""
    return Runtime(attention="chunked", prefill_chunk=chunk, dtype="float32", kv_cache=policy)


def read_logprobs(params, config, ids, policy=None):
    positions = np.arange(1, len(ids))
    return read(params, config, with_policy(policy), ids, positions, ids[1:]).logprobs


def reference_logprobs(params, config, ids, **kw):
    return np.take_along_axis(log_softmax(reference_logits(params, config, ids[:-1], **kw)), ids[1:, None], -1)[:, 0]


IDS = np.random.default_rng(7).integers(3, 97, 300).astype(np.int32)


@pytest.mark.parametrize("kind", ["int8", "fp8"])
def test_quantized_cache_read_equals_the_quantizing_reference(kind):
    config, params = tiny()
    got = read_logprobs(params, config, IDS, KVPolicy(kind))  # 5 chunks of 64
    np.testing.assert_allclose(got, reference_logprobs(params, config, IDS, quant=kind), atol=REFERENCE_TOLERANCE)
    assert np.abs(got - read_logprobs(params, config, IDS)).max() > 1e-3  # and it is not the exact cache


def test_quantized_cache_read_stays_within_the_stated_tolerance_of_exact_on_the_embedded_model():
    ids = np.random.default_rng(0).integers(3, 4000, 300)
    exact = load_model(EMBEDDED_MODEL, "float32", prefill_chunk=64).read(ids, np.arange(1, 300), ids[1:]).logprobs
    for kind, tolerance in EXACT_TOLERANCE.items():
        model = load_model(EMBEDDED_MODEL, "float32", prefill_chunk=64, kv_cache=kind)
        change = np.abs(model.read(ids, np.arange(1, 300), ids[1:]).logprobs - exact)
        assert 1e-4 < change.max() <= tolerance and change.mean() <= tolerance / 10, (kind, change.max())


def test_quantized_cache_generation_sees_what_the_read_sees():
    config, params = tiny(seed=1)
    prompt = IDS[:70]
    (out,) = generate(params, config, with_policy(KVPolicy("int8"), 32), [prompt], 6)
    full = np.concatenate([prompt, out.tokens[:-1]]).astype(np.int32)
    want = reference_logits(params, config, full, quant="int8")[len(prompt) - 1:].argmax(-1)
    assert out.tokens == want.tolist()


def streaming_visible(t, sinks, window):
    def visible(layer):
        qp, kp = np.arange(t)[:, None], np.arange(t)[None, :]
        return np.broadcast_to((kp <= qp) & ((qp - kp < window) | (kp < sinks)), (2, t, t))
    return visible


def test_streaming_read_is_exact_when_the_window_holds_the_text_and_masked_otherwise():
    config, params = tiny()
    exact = read_logprobs(params, config, IDS)
    wide = read_logprobs(params, config, IDS, KVPolicy("streaming", sinks=4, window=512))
    np.testing.assert_allclose(wide, exact, atol=1e-6)
    got = read_logprobs(params, config, IDS, KVPolicy("streaming", sinks=4, window=48))
    want = reference_logprobs(params, config, IDS, visible=streaming_visible(len(IDS) - 1, 4, 48))
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert np.abs(got - exact).max() > 1e-2  # the window bites


def test_streaming_generation_equals_the_masked_reference():
    config, params = tiny(seed=2)
    prompt = IDS[:90]
    (out,) = generate(params, config, with_policy(KVPolicy("streaming", sinks=3, window=24), 32), [prompt], 6)
    full = np.concatenate([prompt, out.tokens[:-1]]).astype(np.int32)
    want = reference_logits(params, config, full, visible=streaming_visible(len(full), 3, 24))
    assert out.tokens == want[len(prompt) - 1:].argmax(-1).tolist()


def reference_snapkv(config, captured, n, policy):
    """keep bool [L, n, KV] the numpy way from the exact prefill's q, k: SnapKV's softmax of the last
    `window` queries over the prompt, summed over them and the KV head's query heads, pooled, top-k."""
    w, kv, g = policy.window, config.num_kv_heads, config.num_heads // config.num_kv_heads
    keep = np.ones((config.num_layers, n, kv), bool)
    for layer, (q, k) in enumerate(captured):
        votes = np.zeros((kv, n - w))
        for head in range(config.num_heads):
            scores = q[n - w:, head].astype(np.float64) @ k[:, head // g].T.astype(np.float64) * config.attention_scale
            scores = np.where(np.arange(n)[None, :] <= np.arange(n - w, n)[:, None], scores, -np.inf)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            votes[head // g] += (p / p.sum(-1, keepdims=True))[:, :n - w].sum(0)
        half = policy.kernel // 2
        padded = np.pad(votes, ((0, 0), (half, half)), constant_values=-np.inf)
        pooled = np.stack([padded[:, i:i + policy.kernel].max(-1) for i in range(n - w)], axis=1)
        keep[layer, :n - w] = False
        for head in range(kv):
            keep[layer, np.argsort(-pooled[head], kind="stable")[:policy.budget - w], head] = True
    return keep


def test_snapkv_keeps_the_positions_the_reference_picks_and_generates_as_the_masked_reference():
    config, params = tiny(seed=3)
    policy = KVPolicy("snapkv", budget=40, window=8, kernel=5, pool="max")
    snap = with_policy(policy)
    prompt = IDS[:120]
    n = len(prompt)
    captured = []
    reference_logits(params, config, prompt, capture=captured)
    want_keep = reference_snapkv(config, captured, n, policy)

    cache = KVCache(*(jnp.zeros((config.num_layers, 1, config.num_kv_heads, 256, config.head_dim)) for _ in range(2)))
    padded = np.zeros((1, 128), np.int32)
    padded[0, :n] = prompt
    rope = rope_tables(config, n)
    for start in range(0, n - 1, 64):
        cache = prefill_rows(params, cache, jnp.asarray(padded[:, start:start + 64]), jnp.int32(start), jnp.int32(0),
                             rope, config=config, runtime=snap)
    keep = np.asarray(snapkv_masks(params, config, snap, cache, [prompt]))[0]  # [L, S, KV]
    np.testing.assert_array_equal(keep[:, :n], want_keep)
    assert keep[:, n:].all() and keep[:, :n - 8].sum(1).tolist() == [[32, 32], [32, 32]]

    (out,) = generate(params, config, snap, [prompt], 6)
    full = np.concatenate([prompt, out.tokens[:-1]]).astype(np.int32)
    t = len(full)

    def visible(layer):  # queries after the prompt see the kept prompt positions; the prompt itself is exact
        seen = np.broadcast_to(np.tril(np.ones((t, t), bool)), (2, t, t)).copy()
        dropped = ~want_keep[layer].T  # [KV, n]
        seen[:, n:, :n] &= ~dropped[:, None, :]
        return seen

    want = reference_logits(params, config, full, visible=visible)
    assert out.tokens == want[n - 1:].argmax(-1).tolist()
    assert np.abs(want[n:] - reference_logits(params, config, full)[n:]).max() > 1e-2  # the compression bites


def test_snapkv_with_a_budget_holding_the_prompt_generates_exactly():
    config, params = tiny(seed=4)
    prompts = [IDS[:120], IDS[150:190], IDS[200:205]]  # longer than the window, and one shorter
    exact = generate(params, config, with_policy(None), prompts, 8)
    snap = generate(params, config, with_policy(KVPolicy("snapkv", budget=128, window=16, kernel=7, pool="avg")),
                    prompts, 8)
    assert [g.tokens for g in snap] == [g.tokens for g in exact]
