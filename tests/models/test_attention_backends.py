"""Attention backends against the xla reference: masks, GQA, soft-cap, cache offsets; registry errors.

splash runs in Pallas interpret mode on CPU (slow: shapes are the kernel's minimum, 128-token
blocks); cudnn's decomposition runs through jax's XLA path here and on cuDNN only on a GPU.
"""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxeval.engine.read import read
from jaxeval.engine.runtime import Runtime
from jaxeval.errors import ConfigError
from jaxeval.models.attention import (BACKENDS, check_attention, chunked_attention, get_attention,
                                      xla_attention)
from jaxeval.models.attention_parts import offset_attention
from jaxeval.models.config import config_from_hf
from jaxeval.models.cudnn_attention import _part as cudnn_part
from jaxeval.models.cudnn_attention import cudnn_attention
from jaxeval.models.decoder import Decoder
from jaxeval.models.splash_attention import splash_attention

# (T queries, S keys, start, window, softcap); H=4 query heads over KV=2 heads (GQA) throughout
CASES = {
    "causal": (128, 128, 0, 0, None),
    "sliding_window": (128, 128, 0, 40, None),
    "softcap_cache_offset": (128, 256, 128, 0, 30.0),
    "window_cache_offset": (128, 384, 256, 100, None),
    # two query blocks; the second sees no key before the chunk (splash skips its history blocks)
    "window_two_query_blocks": (256, 512, 256, 100, None),
    "full_three_history_blocks": (128, 512, 384, 0, None),  # splash: one history call per 128 keys before
}
SMALL_CASES = {  # for the XLA-path decomposition, which has no 128-block minimum
    "short_window_offset": (8, 64, 3, 9, None),  # the window reaches before position 0
    "start_zero_with_cache": (16, 48, 0, 5, None),  # nothing before the chunk
}


def qkv(t, s, batch=1, heads=4, kv_heads=2, head_dim=16, dtype=jnp.float32, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((batch, t, heads, head_dim))
    k, v = (rng.standard_normal((batch, s, kv_heads, head_dim)) for _ in range(2))
    return tuple(jnp.asarray(x, dtype) for x in (q, k, v))


def run(attend, case, **kw):
    t, s, start, window, softcap = (CASES | SMALL_CASES)[case]
    q, k, v = qkv(t, s)
    # start traced (as in read's prefill_chunk); the reference gets it as a Python int
    got = jax.jit(lambda q, k, v, st: attend(q, k, v, st, window, 0.25, softcap, **kw))(q, k, v, jnp.int32(start))
    want = xla_attention(q, k, v, start, window, 0.25, softcap)
    return np.asarray(got), np.asarray(want)


@pytest.mark.parametrize("case", list(CASES))
def test_splash_interpret_matches_xla(case):
    got, want = run(splash_attention, case)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("blocks", [(64, 128), (32, 16)], ids=["q64_k128", "q32_k16"])
@pytest.mark.parametrize("case", list(CASES | SMALL_CASES))
def test_chunked_matches_xla(case, blocks):
    """Key blocks wider and narrower than query blocks: the masked edges (diagonal, window start) and the
    unmasked blocks between them."""
    block_q, block_k = blocks
    if (CASES | SMALL_CASES)[case][0] % block_q:
        block_q = block_k = 8
    got, want = run(lambda *a: chunked_attention(*a, block_q=block_q, block_k=block_k), case)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("case", [c for c in CASES | SMALL_CASES if c != "softcap_cache_offset"])
def test_cudnn_decomposition_matches_xla(case):
    """cudnn's split into static-mask calls, run through jax's XLA implementation on CPU."""
    got, want = run(lambda *a: cudnn_attention(*a, implementation="xla"), case)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


@pytest.mark.parametrize("start, blocks", [(0, 0), (48, 3), (40, 3), (80, 5)])
def test_blocked_history_computes_only_the_key_blocks_before_the_chunk(start, blocks):
    """splash's split of a chunk at a traced offset: one history call per T keys before it, none past it.

    (The old split called the history over the whole cache, keys past the offset masked: twice the
    causal minimum over a multi-chunk prefill.) Each call is counted as it runs (the loop's trip count
    is traced) and the merged result equals the xla reference.
    """
    q, k, v = qkv(16, 96)
    runs = []

    def part(q, k, v, kind, window, valid):  # cudnn's calls through XLA, counted per execution
        if kind == "history":
            jax.debug.callback(lambda n: runs.append(int(n)), k.shape[1])
        return cudnn_part(q, k, v, kind, window, valid, scale=0.25, implementation="xla")

    got = jax.jit(lambda st: offset_attention(part, q, k, v, st, 0, blocked_history=True))(jnp.int32(start))
    jax.effects_barrier()
    assert runs == [16] * blocks
    np.testing.assert_allclose(got, xla_attention(q, k, v, start, 0, 0.25), atol=1e-5, rtol=0)


def test_traced_window_selects_among_the_model_windows():
    """Scanned layers pass their window traced: the static-mask backends switch over the config's."""
    q, k, v = qkv(16, 48)
    attend = jax.jit(lambda w: cudnn_attention(q, k, v, 16, w, 0.25, windows=(0, 7), implementation="xla"))
    for window in (0, 7):
        np.testing.assert_allclose(attend(jnp.int32(window)), xla_attention(q, k, v, 16, window, 0.25), atol=1e-5)
    with pytest.raises(ValueError, match="static masks"):
        jax.jit(lambda w: cudnn_attention(q, k, v, 16, w, 0.25, implementation="xla"))(jnp.int32(7))


def tiny_gemma2():
    """Sliding (window 200) and full layers, soft-capping, GQA: every mask kind splash has."""
    raw = dict(model_type="gemma2", vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=1024,
               rope_theta=10000.0, sliding_window=200, query_pre_attn_scalar=16, attn_logit_softcapping=20.0,
               final_logit_softcapping=15.0)
    config = config_from_hf(raw)
    return config, Decoder(config, rngs=nnx.Rngs(1)).params()


def test_read_through_decoder_splash_equals_xla():
    config, params = tiny_gemma2()
    ids = np.random.RandomState(0).randint(0, config.vocab_size, size=240)
    positions = np.arange(1, 240)
    # 240 tokens: bucket 256 in two chunks of 128, so the second chunk attends at a cache offset
    results = {b: read(params, config, Runtime(attention=b, prefill_chunk=128, dtype="float32"), ids, positions,
                       ids[positions]) for b in ("xla", "splash")}
    np.testing.assert_allclose(results["splash"].logprobs, results["xla"].logprobs, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(results["splash"].top1, results["xla"].top1)


def test_registry_errors_name_the_platform_and_alternatives():
    config, _ = tiny_gemma2()  # sliding windows + attn soft-cap
    llama = config_from_hf(dict(model_type="llama", vocab_size=97, hidden_size=32, intermediate_size=48,
                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                max_position_embeddings=1024))
    assert BACKENDS == ("xla", "chunked", "splash", "cudnn")
    with pytest.raises(ConfigError, match=r"'cudnn' runs on gpu, not on this cpu platform; use xla or chunked "
                                          r"instead"):  # splash runs on CPU only in interpret mode, for tests
        check_attention("cudnn", llama, "bfloat16", platform="cpu")
    with pytest.raises(ConfigError, match=r"soft-capping.*use xla or chunked instead"):
        check_attention("cudnn", config, "bfloat16", platform="gpu")
    with pytest.raises(ConfigError, match=r"needs dtype bfloat16 or float16 \(got float32\)"):
        check_attention("cudnn", llama, "float32", platform="gpu")
    with pytest.raises(ConfigError, match=r"'splash' runs on tpu/cpu, not on this gpu platform; use xla or "
                                          r"chunked or cudnn"):
        check_attention("splash", llama, "bfloat16", platform="gpu")
    with pytest.raises(ConfigError, match="not a backend"):
        check_attention("flash", llama)
    assert check_attention("splash", config, "float32", platform="tpu").name == "splash"
    if jax.default_backend() == "cpu":
        with pytest.raises(ConfigError, match="cpu platform"):
            get_attention("cudnn", llama)
    with pytest.raises(ConfigError, match="multiples of 128"):
        splash_attention(*qkv(64, 64), 0, 0, 0.25)


def test_load_model_refuses_cudnn_on_cpu_before_loading(tiny_llama_folder):
    if jax.default_backend() != "cpu":
        pytest.skip("checks the CPU refusal")
    import jaxeval

    with pytest.raises(ConfigError, match="attention='cudnn' runs on gpu, not on this cpu platform"):
        jaxeval.load_model(tiny_llama_folder(), dtype="bfloat16", attention="cudnn", load_tokenizer=False)


@pytest.mark.accelerator
def test_cudnn_on_gpu_matches_xla():
    if jax.default_backend() != "gpu":
        pytest.skip("needs a GPU")
    for case in ("causal", "sliding_window", "window_cache_offset"):
        t, s, start, window, _ = CASES[case]
        q, k, v = qkv(t, s, batch=2, heads=8, kv_heads=2, head_dim=64, dtype=jnp.bfloat16)
        got = jax.jit(lambda q, k, v, st: cudnn_attention(q, k, v, st, window, 0.125))(q, k, v, jnp.int32(start))
        want = xla_attention(q, k, v, start, window, 0.125)
        np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(want, np.float32), atol=2e-2)
    q, k, v = qkv(256, 2048, heads=8, kv_heads=2, head_dim=64, dtype=jnp.bfloat16)  # a prefill chunk at 1024
    got = jax.jit(lambda st: cudnn_attention(q, k, v, st, 0, 0.125))(jnp.int32(1024))
    np.testing.assert_allclose(np.asarray(got, np.float32), np.asarray(xla_attention(q, k, v, 1024, 0, 0.125),
                                                                        np.float32), atol=3e-2)


SHARDED = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jaxeval.models.mesh import make_mesh
    from jaxeval.models.attention import xla_attention
    from jaxeval.models.splash_attention import make_splash_attention
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((2, 128, 4, 16)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((2, 256, {kv}, 16)), jnp.float32) for _ in range(2))
    mesh = make_mesh("{mesh}")
    attend = make_splash_attention(mesh=mesh)
    got = jax.jit(lambda q, k, v, st: attend(q, k, v, st, 0, 0.25, 20.0))(q, k, v, jnp.int32(128))
    err = float(jnp.abs(got - xla_attention(q, k, v, 128, 0, 0.25, 20.0)).max())
    assert err < 1e-5, err
    print("ok", err)
""")


@pytest.mark.slow
@pytest.mark.parametrize("mesh,kv", [("data=2,tensor=2", 2), ("tensor=4", 2)])
def test_splash_under_shard_map(mesh, kv):
    """Heads over `tensor` (K/V heads split, or replicated when tensor > KV heads), batch over `data`."""
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED.format(mesh=mesh, kv=kv)], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-3000:]


def _emulated_cudnn_op(stats_dtype=jnp.float32):
    """(op, MaskType) standing in for jax's cuDNN op on CPU: jax.nn's XLA attention on float32 copies of
    q, k, v, the output in the inputs' dtype and the statistics [B, H, T] in stats_dtype (cuDNN: float32)."""
    from jax._src.cudnn.fused_attention_stablehlo import MaskType

    def op(q, k, v, bias, mask, q_seqlen, kv_seqlen, *, scale, mask_type, sliding_window_length, return_residual):
        assert bias is None and return_residual
        padded = mask_type in (MaskType.PADDING, MaskType.PADDING_CAUSAL)
        assert padded == (q_seqlen is not None) == (kv_seqlen is not None)
        causal = mask_type in (MaskType.CAUSAL, MaskType.PADDING_CAUSAL)
        assert causal or sliding_window_length is None
        f32 = [x.astype(jnp.float32) for x in (q, k, v)]
        out, lse = jax.nn.dot_product_attention(
            *f32, mask=mask, scale=scale, is_causal=causal, key_value_seq_lengths=kv_seqlen,
            query_seq_lengths=q_seqlen, implementation="xla", return_residual=True,
            local_window_size=None if sliding_window_length is None else (sliding_window_length - 1, 0))
        return out.astype(q.dtype), jnp.transpose(lse, (0, 2, 1)).astype(stats_dtype)

    return op, MaskType


@pytest.mark.parametrize("case", [c for c in CASES | SMALL_CASES if c != "softcap_cache_offset"])
def test_cudnn_op_arguments_match_xla(case, monkeypatch):
    """The cuDNN parts call the op under jax.nn with the masks jax.nn would give it (emulated on CPU)."""
    import jaxeval.models.cudnn_attention as cudnn_module
    monkeypatch.setattr(cudnn_module, "_cudnn_op", _emulated_cudnn_op)
    got, want = run(cudnn_attention, case)
    np.testing.assert_allclose(got, want, atol=1e-5, rtol=0)


def test_cudnn_merge_keeps_float32_statistics(monkeypatch):
    """bfloat16 inputs, a chunk at offset 512 of 1,024 keys (one diagonal and one history part merged):
    with cuDNN's float32 log-sum-exp the error is the output's bfloat16 rounding; with the log-sum-exp
    rounded to bfloat16, as jax.nn returns it, the merge weights add their own."""
    import jaxeval.models.cudnn_attention as cudnn_module
    q, k, v = qkv(128, 1024, heads=8, kv_heads=2, head_dim=64, dtype=jnp.bfloat16, seed=1)
    q = q * 4  # peaked scores: log-sum-exps well above 1, where bfloat16's absolute rounding grows
    want = np.asarray(xla_attention(*(x.astype(jnp.float32) for x in (q, k, v)), 512, 0, 0.125))
    errors = {}
    for stats in (jnp.float32, jnp.bfloat16):
        monkeypatch.setattr(cudnn_module, "_cudnn_op", lambda: _emulated_cudnn_op(stats))
        got = jax.jit(lambda st: cudnn_attention(q, k, v, st, 0, 0.125))(jnp.int32(512))
        errors[stats] = float(np.abs(np.asarray(got, np.float32) - want).max())
    print(errors)
    assert errors[jnp.float32] < 0.5 * errors[jnp.bfloat16]


def test_cudnn_op_missing_falls_back_with_one_warning(monkeypatch, caplog):
    from jax._src.cudnn import fused_attention_stablehlo as fa

    import jaxeval.models.cudnn_attention as cudnn_module
    monkeypatch.setattr(fa, "dot_product_attention", lambda query, key, value: None)
    cudnn_module._cudnn_op.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="jaxeval.models.cudnn_attention"):
            assert cudnn_module._cudnn_op() is None and cudnn_module._cudnn_op() is None
    finally:
        cudnn_module._cudnn_op.cache_clear()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "lacks ['kv_seqlen', 'mask'," in warnings[0] and "bfloat16" in warnings[0]


def test_chunked_attention_on_gpu_runs_rows_one_at_a_time_to_the_same_result():
    """A GPU program takes the rows one by one (their blocks read in place, cache or CacheLayer), same sums."""
    import numpy as np

    from jaxeval.models.attention import chunked_attention
    from jaxeval.models.cache_layer import CacheLayer
    from jaxeval.models.platform import target_platform

    rng = np.random.default_rng(0)
    b, t, s, h, kv, d = 3, 256, 512, 4, 2, 16
    q = jnp.asarray(rng.standard_normal((b, t, h, d)), jnp.float32)
    stack_k = jnp.asarray(rng.standard_normal((2, b, s, kv, d)), jnp.float32)
    stack_v = jnp.asarray(rng.standard_normal((2, b, s, kv, d)), jnp.float32)
    want = chunked_attention(q, stack_k[1], stack_v[1], 256, 0, 0.25, block_q=128, block_k=128)
    with target_platform("gpu"):
        plain = chunked_attention(q, stack_k[1], stack_v[1], 256, 0, 0.25, block_q=128, block_k=128)
        in_place = chunked_attention(q, CacheLayer(stack_k, 1, jnp.float32), CacheLayer(stack_v, 1, jnp.float32),
                                     256, 0, 0.25, block_q=128, block_k=128)
        on_gpu = jax.jit(lambda q: chunked_attention(q, stack_k[1], stack_v[1], 256, 0, 0.25, block_q=128,
                                                     block_k=128)).lower(q).as_text()
    on_cpu = jax.jit(lambda q: chunked_attention(q, stack_k[1], stack_v[1], 256, 0, 0.25, block_q=128,
                                                 block_k=128)).lower(q).as_text()
    np.testing.assert_allclose(np.asarray(plain), np.asarray(want), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(in_place), np.asarray(want), rtol=1e-6, atol=1e-6)
    assert on_gpu.count("stablehlo.while") == on_cpu.count("stablehlo.while") + 1  # the rows' loop, GPU only
