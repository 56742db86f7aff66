"""gpt-oss against transformers' GptOssForCausalLM, float32, from the folder save_pretrained writes (fused
float experts: mlp.experts.gate_up_proj [E, D, 2I] with gate and up interleaved, its bias, down_proj [E, I, D]).

What the family adds to the one decoder: learned attention sinks (one logit per query head in every softmax),
q/k/v/o biases, alternating sliding / full layers from layer_types, YaRN rope with truncate=false, a router
with a bias (top-k, then softmax over the k), experts with biases and the clamped SwiGLU. The tiny config
sets swiglu_limit=1 so the clamps bite, and its sinks are drawn large enough to matter (controls below).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from jaxeval.engine.read import read  # noqa: E402
from jaxeval.engine.runtime import Runtime  # noqa: E402
from jaxeval.errors import CheckpointError, ConfigError  # noqa: E402
from jaxeval.models.config import config_from_hf  # noqa: E402
from moe_checks import (TOL, eight_devices_equal_one, greedy_tokens_match, load, perturb, read_diff,  # noqa: E402
                        reference_logprobs)

VOCAB = 256
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=32, num_hidden_layers=3, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, num_local_experts=8, num_experts_per_tok=4, sliding_window=300,
              max_position_embeddings=131072, swiglu_limit=1.0, eos_token_id=2, pad_token_id=0)


def build(folder, seed=0, **overrides):
    config = transformers.GptOssConfig(**{**CONFIG, **overrides})
    torch.manual_seed(seed)
    model = perturb(transformers.GptOssForCausalLM(config), seed=seed)
    gen = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for layer in model.model.layers:  # sinks of the size of the attention logits: they take a real share
            layer.self_attn.sinks.copy_(torch.randn(layer.self_attn.sinks.shape, generator=gen) * 2.0)
    model.save_pretrained(folder)
    return model, folder


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return build(tmp_path_factory.mktemp("gpt_oss"))


def test_read_and_greedy_generation_match_transformers(reference):
    torch_model, folder = reference
    ids = np.random.default_rng(0).integers(3, VOCAB, 2048)
    ref = reference_logprobs(torch_model, ids)
    model = load(folder, prefill_chunk=512)
    c = model.config
    assert (c.moe.family, c.moe.num_experts, c.moe.top_k, c.moe.swiglu_limit) == ("gpt_oss", 8, 4, 1.0)
    assert c.layer_windows == (300, 0, 300) and c.attention_sinks and c.qkv_bias and c.o_bias
    assert (c.rope.kind, c.rope.truncate, c.rope.factor, c.rope.theta) == ("yarn", False, 32.0, 150000.0)
    diff = read_diff(model, ids, ref)
    print(f"gpt_oss: max |d log p| {diff.max():.2e} at 2048")
    assert diff.max() <= TOL
    # controls: without the sinks, or with the clamp lifted, the log-probs are far off
    positions = np.arange(1, 512)
    for wrong in (dataclasses.replace(c, attention_sinks=False),
                  dataclasses.replace(c, moe=dataclasses.replace(c.moe, swiglu_limit=7.0))):
        other = read(model.module.params(), wrong, Runtime(dtype="float32"), ids[:512], positions, ids[1:512]).logprobs
        assert np.abs(other - ref[:511]).max() > 100 * TOL
    greedy_tokens_match(model, torch_model, [ids[:200], ids[500:837]])


@pytest.mark.parametrize("backend", ["xla", "chunked"])
def test_backends_with_sinks_through_prefill_chunks(reference, backend):
    """Every CPU backend that takes sinks, prefill chunks of 128 (sliding layers reach back over two)."""
    torch_model, folder = reference
    ids = np.random.default_rng(1).integers(3, VOCAB, 640)
    ref = reference_logprobs(torch_model, ids)
    diff = read_diff(load(folder, prefill_chunk=128, attention=backend), ids, ref)
    assert diff.max() <= TOL


def test_config_errors_and_defaults():
    raw = {**CONFIG, "model_type": "gpt_oss"}
    c = config_from_hf(raw)
    assert c.layer_types == ("sliding_attention", "full_attention", "sliding_attention")  # GptOssConfig's default
    bare = {k: v for k, v in raw.items() if k not in ("sliding_window", "num_local_experts", "num_experts_per_tok",
                                                     "swiglu_limit", "head_dim")}
    d = config_from_hf(bare)  # GptOssConfig's class defaults
    assert (d.sliding_window, d.moe.num_experts, d.moe.top_k, d.moe.swiglu_limit, d.head_dim) == (128, 128, 4, 7.0, 64)
    assert (d.rope.kind, d.rope.original_max_position, d.rope.truncate) == ("yarn", 4096, False)
    hub = {**raw, "rope_theta": 150000, "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0,
                                                          "beta_slow": 1.0, "truncate": False,
                                                          "original_max_position_embeddings": 4096}}
    assert config_from_hf(hub).rope == c.rope  # the hub's v4 fields read as the v5 ones
    assert not config_from_hf({**raw, "attention_bias": False}).o_bias
    with pytest.raises(ConfigError, match=r"^config.json: field 'swiglu_limit'='7' must be a number$"):
        config_from_hf({**raw, "swiglu_limit": "7"})
    with pytest.raises(ConfigError, match=r"^config.json: field 'attention_bias'=None must be true or false$"):
        config_from_hf({**raw, "attention_bias": None})
    with pytest.raises(ConfigError, match=r"^config.json: field 'layer_types' has unsupported entry 'linear"):
        config_from_hf({**raw, "layer_types": ["linear_attention"] * 3})
    from jaxeval.weights.checkpoint_quant import read_scheme
    assert read_scheme({**raw, "quantization_config": {"quant_method": "mxfp4"}}, "config.json") is None
    with pytest.raises(ConfigError, match="quant_method 'mxfp4' is supported for gpt-oss experts only"):
        read_scheme({**raw, "model_type": "llama", "quantization_config": {"quant_method": "mxfp4"}}, "config.json")


def eager_sink_attention(q, k, v, start, window, scale, sinks):
    """numpy, transformers' eager gpt-oss attention: scores, mask, a sink column, softmax, the column dropped."""
    t, h, s_len = q.shape[1], q.shape[2], k.shape[1]
    k, v = (np.repeat(np.asarray(x, np.float64), h // x.shape[2], axis=2) for x in (k, v))
    scores = np.einsum("bthd,bshd->bhts", np.asarray(q, np.float64), k) * scale
    diff = (start + np.arange(t))[:, None] - np.arange(s_len)[None, :]
    scores = np.where((diff >= 0) & ((window <= 0) | (diff < window)), scores, -np.inf)
    logits = np.concatenate([scores, np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None, None],
                                                     scores.shape[:-1] + (1,))], axis=-1)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs = (probs / probs.sum(-1, keepdims=True))[..., :-1]
    return np.einsum("bhts,bshd->bthd", probs, v)


@pytest.mark.parametrize("case", [(128, 128, 0, 0), (128, 384, 256, 100), (128, 256, 128, 0)],
                         ids=["causal", "window_cache_offset", "full_cache_offset"])
def test_every_backend_folds_the_sinks_in(case):
    """Kernel level, against the eager formula: xla, chunked, splash (interpret), cudnn's decomposition (XLA
    path), and the decode step on the last query; a traced chunk start, GQA (4 query heads over 2)."""
    import jax
    import jax.numpy as jnp
    from jaxeval.models.attention import chunked_attention, xla_attention
    from jaxeval.models.decode_attention import decode_attention
    from jaxeval.models.cudnn_attention import cudnn_attention
    from jaxeval.models.splash_attention import splash_attention
    t, s_len, start, window = case
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((1, t, 4, 16)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((1, s_len, 2, 16)), jnp.float32) for _ in range(2))
    sinks = jnp.asarray(rng.standard_normal(4) * 2 + 4, jnp.float32)  # a share of the softmax over 100s of keys
    want = eager_sink_attention(q, k, v, start, window, 0.25, sinks)
    backends = {"xla": xla_attention, "chunked": lambda *a, **kw: chunked_attention(*a, block_q=64, block_k=128, **kw),
                "splash": splash_attention, "cudnn": lambda *a, **kw: cudnn_attention(*a, implementation="xla", **kw)}
    for name, attend in backends.items():
        got = jax.jit(lambda st: attend(q, k, v, st, window, 0.25, None, sink_logits=sinks))(jnp.int32(start))
        assert np.abs(np.asarray(got) - want).max() < 1e-5, name
    without = xla_attention(q, k, v, start, window, 0.25)
    assert np.abs(np.asarray(without) - want).max() > 1e-2  # the sinks matter here
    last = decode_attention(q[0, -1], k[0][None], v[0][None], 0, start + t - 1, window, 0.25, block_k=128,
                            sink_logits=sinks)
    assert np.abs(np.asarray(last) - want[0, -1]).max() < 1e-5


def mxfp4_codes(rng, float_shape):
    """Random MXFP4 blocks and scales of a float expert tensor [E, in, out] (stored [E, out, in / 32, 16])."""
    e, n_in, n_out = float_shape
    blocks = rng.integers(0, 256, (e, n_out, n_in // 32, 16), dtype=np.uint8)
    scales = rng.integers(120, 125, (e, n_out, n_in // 32), dtype=np.uint8)  # 2**-7 .. 2**-3 per group
    return blocks, scales


def test_mxfp4_dequantization_equals_transformers():
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    from jaxeval.weights.mxfp4 import MXFP4Tensor, dequantize
    blocks, scales = mxfp4_codes(np.random.default_rng(0), (3, 64, 96))
    scales[0, 0, 0], scales[1, 2, 1] = 0, 255  # the E8M0 extremes too
    want = convert_moe_packed_tensors(torch.as_tensor(blocks), torch.as_tensor(scales), dtype=torch.float32)
    got = dequantize(blocks, scales)
    assert got.shape == (3, 64, 96)
    np.testing.assert_array_equal(got.astype(np.float32), want.numpy())
    # read lazily: slices of slices (the loader's interleave, then a shard's block) dequantize only themselves
    lazy = MXFP4Tensor(blocks, scales)
    for first, then in [((Ellipsis, slice(1, None, 2)), (slice(None), slice(10, 40), slice(3, 20))),
                        ((slice(1, 3),), (slice(None), slice(33, 64), slice(0, None, 2))),
                        ((Ellipsis,), (slice(2, 3), slice(63, 64), slice(95, 96)))]:
        view, dense = lazy[first][then], want.numpy()[first][then]
        assert view.shape == dense.shape
        out = np.empty(dense.shape, np.float32)
        out[...] = view  # as the loader fills a shard
        np.testing.assert_array_equal(out, dense)


def test_mxfp4_folder_reads_as_its_dequantized_model(reference, tmp_path):
    """The hub's layout: experts as <name>_blocks / <name>_scales and quantization_config mxfp4; read as
    transformers' model holding the dequantized experts."""
    import json
    from safetensors.numpy import load_file, save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    import copy
    torch_model, folder = copy.deepcopy(reference[0]), reference[1]  # the module's model stays as it is
    tensors = load_file(str(folder / "model.safetensors"))
    rng = np.random.default_rng(7)
    for i, layer in enumerate(torch_model.model.layers):
        for proj in ("gate_up_proj", "down_proj"):
            name = f"model.layers.{i}.mlp.experts.{proj}"
            blocks, scales = mxfp4_codes(rng, tensors.pop(name).shape)
            tensors[f"{name}_blocks"], tensors[f"{name}_scales"] = blocks, scales
            with torch.no_grad():
                getattr(layer.mlp.experts, proj).copy_(convert_moe_packed_tensors(
                    torch.as_tensor(blocks), torch.as_tensor(scales), dtype=torch.float32))
    out = tmp_path / "mxfp4"
    out.mkdir()
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn",
                                     "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    (out / "config.json").write_text(json.dumps(config))
    save_file(tensors, str(out / "model.safetensors"))
    ids = np.random.default_rng(2).integers(3, VOCAB, 512)
    diff = read_diff(load(out, prefill_chunk=256), ids, reference_logprobs(torch_model, ids))
    assert diff.max() <= TOL
    name = "model.layers.1.mlp.experts.down_proj_scales"  # a missing half: one line naming it
    tensors.pop(name)
    save_file(tensors, str(out / "model.safetensors"))
    with pytest.raises(CheckpointError, match=f"tensor '{name}' is missing"):
        load(out)


@pytest.mark.long
def test_long_parity(tmp_path):
    """16,384 positions through eight 2,048-token prefill chunks: sliding layers of 1,024, full layers, sinks."""
    torch_model, folder = build(tmp_path / "long", seed=3, sliding_window=1024)
    ids = np.random.default_rng(3).integers(3, VOCAB, 16384)
    ref = reference_logprobs(torch_model, ids)
    diff = read_diff(load(folder, prefill_chunk=2048), ids, ref)
    print(f"gpt_oss 16k: max |d log p| {diff.max():.2e}, past 8k {diff[8192:].max():.2e}")
    assert diff.max() <= TOL


def test_eight_devices_equal_one(reference):
    """expert x tensor x context = 2 x 2 x 2 simulated devices: sinks split with the query heads over tensor,
    the experts (and their biases) expert-parallel, their width over tensor."""
    _, folder = reference
    diff, top1_same, tokens_same = eight_devices_equal_one(folder, VOCAB, mesh="expert=2,tensor=2,context=2")
    assert diff < 1e-5 and top1_same and tokens_same
