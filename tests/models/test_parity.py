"""Parity of jaxeval's decoder against transformers' PyTorch reference models, family by family.

Each family gets a tiny random-weight model built with transformers' own classes (every parameter,
norms and biases included, is perturbed so that no weight sits at its 0/1 initial value), saved with
save_pretrained and loaded back with jaxeval.load_model (safetensors read without torch). The full
next-token distribution at every position of a 1,000-1,500 token text must match torch's
log_softmax of the full forward to 1e-4, and the top-1 must match wherever the reference's top-2
margin exceeds 1e-3. Sequences are several times longer than the sliding windows and than the
original context of the rope scaling, and negative controls check that getting the window, rope,
soft-capping or scaling wrong would move the result far past the tolerance.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from jaxeval.engine.read import read as engine_read  # noqa: E402
from jaxeval.engine.runtime import Runtime  # noqa: E402
from jaxeval.models.config import FULL, SLIDING, RopeConfig, config_from_hf, load_hf_config  # noqa: E402

TOL = 1e-4  # max abs difference of log-probabilities
MARGIN = 1e-3  # top-1 must agree where the reference's top-2 margin exceeds this
CONTROL = 10 * TOL  # a negative control must move some log-probability by more than this
VOCAB = 256

COMMON = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=4096, bos_token_id=1, eos_token_id=2, pad_token_id=0)


@dataclasses.dataclass(frozen=True)
class Family:
    name: str
    config_class: str
    model_class: str
    kwargs: dict
    length: int  # tokens in the text; every position 1..length-1 is read
    prefill_chunk: int = 256  # chunked backend: several prefill chunks through the KV cache
    controls: tuple = ()  # (label, (config, params) -> (config, params)): mistakes that must be caught
    slow_controls: tuple = ()  # more of the same, each a recompilation: run with -m slow


def _config_mistake(**changes):
    """A control that replaces ModelConfig fields (each value may be a function of the config)."""
    def mistake(c, params):
        return dataclasses.replace(c, **{k: v(c) if callable(v) else v for k, v in changes.items()}), params
    return mistake


def _no_window():
    return _config_mistake(layer_types=lambda c: (FULL,) * c.num_layers, sliding_window=None)


def _window_plus_one():
    return _config_mistake(sliding_window=lambda c: c.sliding_window + 1)


def _drop_layer_params(*names):
    def mistake(c, params):
        layers = {k: 0 * v if k in names else v for k, v in params["layers"].items()}
        return c, {**params, "layers": layers}
    return mistake


def _rename_layer_params(config_changes: dict, renames: dict):
    """A control that moves layer weights to other parameters (same values) and changes the config."""
    def mistake(c, params):
        layers = {renames.get(k, k): v for k, v in params["layers"].items()}
        return dataclasses.replace(c, **config_changes), {**params, "layers": layers}
    return mistake


def _short_factors_only():
    """longrope: keep the short factors past the original context (the switch never happens)."""
    def short(rope):
        return dataclasses.replace(rope, long_factor=rope.short_factor)
    return _config_mistake(rope=lambda c: short(c.rope), rope_local=lambda c: short(c.rope_local))


def _one_pair_fewer():
    """Partial rotary: rotate one pair of dims fewer (a wrong partial_rotary_factor)."""
    def fewer(rope):
        return dataclasses.replace(rope, short_factor=rope.short_factor[:-1], long_factor=rope.long_factor[:-1])
    return _config_mistake(rotary_dim=lambda c: c.rotary_dim - 2, rope=lambda c: fewer(c.rope),
                           rope_local=lambda c: fewer(c.rope_local))


def _longrope(pairs: int, original: int) -> dict:
    """Phi-3 style factors, one per rotated pair: short ones near 1, long ones growing with the wavelength."""
    return {"rope_type": "longrope", "rope_theta": 10000.0, "original_max_position_embeddings": original,
            "short_factor": [1.0 + 0.02 * i for i in range(pairs)],
            "long_factor": [1.0 + 2.5 * i for i in range(pairs)]}


FAMILIES = [
    Family("llama3", "LlamaConfig", "LlamaForCausalLM", dict(
        COMMON, num_hidden_layers=2, rms_norm_eps=1e-5,
        # head_dim 16, theta 1e4: wavelengths 6 .. 2e4, so high, medium and low frequency bands all occur
        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
        length=1500,
        controls=(("rope scaling ignored", _config_mistake(rope=lambda c: RopeConfig(theta=c.rope.theta),
                                                           rope_local=lambda c: RopeConfig(theta=c.rope.theta))),)),
    Family("llama2", "LlamaConfig", "LlamaForCausalLM", dict(
        COMMON, num_hidden_layers=2, num_key_value_heads=4, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}), length=1000),
    Family("mistral", "MistralConfig", "MistralForCausalLM", dict(
        COMMON, num_hidden_layers=2, sliding_window=200, rope_parameters={"rope_type": "default",
                                                                           "rope_theta": 1e6}),
        length=1000, controls=(("window off by one", _window_plus_one()),),
        slow_controls=(("no sliding window", _no_window()),)),
    Family("qwen2", "Qwen2Config", "Qwen2ForCausalLM", dict(
        COMMON, num_hidden_layers=2, tie_word_embeddings=True, rope_parameters={"rope_type": "default",
                                                                                 "rope_theta": 1e6}),
        length=1000, controls=(("q/k/v biases dropped", _drop_layer_params("bq", "bk", "bv")),)),
    Family("qwen3", "Qwen3Config", "Qwen3ForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=32, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
        length=1000, slow_controls=(("q/k norms skipped", _config_mistake(qk_norm=False)),)),
    Family("gemma2", "Gemma2Config", "Gemma2ForCausalLM", dict(
        COMMON, num_hidden_layers=4, head_dim=16, query_pre_attn_scalar=24, sliding_window=150,
        attn_logit_softcapping=2.0, final_logit_softcapping=3.0, hidden_activation="gelu_pytorch_tanh",
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        length=1000,
        controls=(("no attention soft-cap", _config_mistake(attn_logit_softcap=None)),
                  ("no final soft-cap", _config_mistake(final_logit_softcap=None))),
        slow_controls=(("no sliding window", _no_window()), ("window off by one", _window_plus_one()),
                       ("query scale head_dim**-0.5", _config_mistake(query_scale=0.0)),
                       ("no embedding scaling", _config_mistake(embed_scale=1.0)))),
    Family("gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        COMMON, num_hidden_layers=4, num_key_value_heads=1, head_dim=32, query_pre_attn_scalar=20,
        sliding_window=160, sliding_window_pattern=3, hidden_activation="gelu_pytorch_tanh",
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
        length=1100,
        controls=(("window off by one", _window_plus_one()),
                  ("global rope on local layers", _config_mistake(rope_local=lambda c: c.rope))),
        slow_controls=(("no sliding window", _no_window()),
                       ("no linear rope scaling", _config_mistake(rope=lambda c: RopeConfig(theta=c.rope.theta))))),
    # Phi-3 / 3.5 mini: fused qkv_proj and gate_up_proj, longrope past original_max_position_embeddings (its
    # top-level field), and Phi-3-mini-4k's sliding window on every layer
    Family("phi3", "Phi3Config", "Phi3ForCausalLM", dict(
        COMMON, num_hidden_layers=2, sliding_window=160, original_max_position_embeddings=512,
        rope_parameters=_longrope(8, 512)),
        length=1200, controls=(("short factors past the original context", _short_factors_only()),
                               ("window off by one", _window_plus_one())),
        slow_controls=(("no sliding window", _no_window()),)),
    # Phi-4-mini: partial_rotary_factor 0.75 (12 of 16 dims rotate, 6 longrope factors), tied embeddings
    Family("phi4-mini", "Phi3Config", "Phi3ForCausalLM", dict(
        COMMON, num_hidden_layers=2, partial_rotary_factor=0.75, tie_word_embeddings=True,
        original_max_position_embeddings=512, rope_parameters=_longrope(6, 512)),
        length=1200, controls=(("one rotary pair fewer", _one_pair_fewer()),)),
    # OLMo 2: RMSNorm after attention and MLP (none before), q/k RMSNorm over all heads at once
    Family("olmo2", "Olmo2Config", "Olmo2ForCausalLM", dict(
        COMMON, num_hidden_layers=2, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
        length=1000,
        controls=(("norms before attention and MLP",
                   _rename_layer_params({"pre_norm": True, "sandwich_norm": False},
                                        {"post_attn_norm": "attn_norm", "post_mlp_norm": "mlp_norm"})),
                  ("q/k norm per head", _rename_layer_params({"qk_norm_over_heads": False},
                                                             {"q_norm_heads": "q_norm", "k_norm_heads": "k_norm"})))),
    # OLMo 3: OLMo 2's layer plus sliding layers from layer_types (3 of every 4), YaRN on full layers only
    Family("olmo3", "Olmo3Config", "Olmo3ForCausalLM", dict(
        COMMON, num_hidden_layers=4, sliding_window=160,
        rope_parameters={FULL: {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                "original_max_position_embeddings": 256},
                         SLIDING: {"rope_type": "default", "rope_theta": 500000.0}}),
        length=1100,
        controls=(("window off by one", _window_plus_one()),
                  ("yarn on sliding layers too", _config_mistake(rope_local=lambda c: c.rope))),
        slow_controls=(("no sliding window", _no_window()),)),
    # SmolLM3: NoPE on every 4th layer (no_rope_layer_interval), YaRN as its model card extends it
    Family("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", dict(
        COMMON, num_hidden_layers=4, rope_parameters={"rope_type": "yarn", "rope_theta": 2e6, "factor": 2.0,
                                                      "original_max_position_embeddings": 512}),
        length=1100, controls=(("NoPE layers rotated", _config_mistake(no_rope_layers=())),)),
    # GLM-4-0414: half the head rotates, in interleaved pairs; extra norms after attention and MLP; q/k/v biases;
    # fused gate_up_proj
    Family("glm4", "Glm4Config", "Glm4ForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=16, partial_rotary_factor=0.5, attention_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        length=1000, controls=(("interleaved pairs as half-split", _config_mistake(rope_interleaved=False)),
                               ("post norms skipped", _config_mistake(sandwich_norm=False))),
        slow_controls=(("whole head rotated", _config_mistake(rotary_dim=lambda c: c.head_dim)),
                       ("q/k/v biases dropped", _drop_layer_params("bq", "bk", "bv")))),
    # GLM-4 (glm: GLM-4-9B-chat(-1m)): GLM-4-0414's attention and MLP, Llama's norm placement
    Family("glm", "GlmConfig", "GlmForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=16, partial_rotary_factor=0.5, attention_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        length=1000, controls=(("interleaved pairs as half-split", _config_mistake(rope_interleaved=False)),)),
    # Granite 3.x: embedding, attention (replacing head_dim ** -0.5), residual and logit multipliers
    Family("granite", "GraniteConfig", "GraniteForCausalLM", dict(
        COMMON, num_hidden_layers=2, embedding_multiplier=12.0, attention_multiplier=0.125, residual_multiplier=0.22,
        logits_scaling=8.0, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
        length=1000, controls=(("residual multiplier dropped", _config_mistake(residual_scale=1.0)),
                               ("logits not scaled", _config_mistake(logits_scaling=1.0))),
        slow_controls=(("attention scale head_dim ** -0.5", _config_mistake(query_scale=0.0)),
                       ("no embedding multiplier", _config_mistake(embed_scale=1.0)))),
    # Mistral-Nemo: head_dim 32 != hidden 64 / 4 heads, no sliding window, theta 1e6
    Family("mistral-nemo", "MistralConfig", "MistralForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=32, sliding_window=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
        length=1000, controls=(("attention scale from hidden / heads", _config_mistake(query_scale=16 ** -0.5)),)),
    # Ministral: sliding windows on the layers layer_types names (Mistral slides every layer), explicit head_dim
    Family("ministral", "MinistralConfig", "MinistralForCausalLM", dict(
        COMMON, num_hidden_layers=4, head_dim=16, sliding_window=160, layer_types=[SLIDING, FULL, SLIDING, FULL],
        rope_parameters={"rope_type": "default", "rope_theta": 1e8}),
        length=1000, controls=(("window off by one", _window_plus_one()),
                               ("every layer sliding", _config_mistake(layer_types=lambda c: (SLIDING,) * 4)))),
    # EXAONE 4.0: OLMo 2's norm placement with per-head q/k norms; 3 sliding layers then a global one without
    # rope (sliding_window_pattern 4); llama3 rope scaling
    Family("exaone4", "Exaone4Config", "Exaone4ForCausalLM", dict(
        COMMON, num_hidden_layers=4, sliding_window=160, sliding_window_pattern=4,
        rope_parameters={"rope_type": "llama3", "rope_theta": 1e6, "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64}),
        length=1000,
        controls=(("global layers rotated", _config_mistake(no_rope_layers=())),
                  ("norms before attention and MLP",
                   _rename_layer_params({"pre_norm": True, "sandwich_norm": False},
                                        {"post_attn_norm": "attn_norm", "post_mlp_norm": "mlp_norm"}))),
        slow_controls=(("window off by one", _window_plus_one()),)),
    # Seed-OSS: q/k/v biases (attention_bias), none on o_proj (attention_out_bias), explicit head_dim
    Family("seed_oss", "SeedOssConfig", "SeedOssForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=32, attention_bias=True, attention_out_bias=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1e7}),
        length=1000, controls=(("q/k/v biases dropped", _drop_layer_params("bq", "bk", "bv")),)),
    # Ministral 3: YaRN, and queries scaled by 1 + beta * log(1 + floor(position / original context))
    Family("ministral3", "Ministral3Config", "Ministral3ForCausalLM", dict(
        COMMON, num_hidden_layers=2, head_dim=16,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0, "original_max_position_embeddings": 128,
                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                         "llama_4_scaling_beta": 0.1}),
        length=1000, controls=(("no position scaling of the queries", _config_mistake(query_scale_beta=0.0)),)),
]
BY_NAME = {f.name: f for f in FAMILIES}


def perturb_all_parameters(model, seed: int):
    """Random weights everywhere: matrices ~ N(0, 1/fan_in), vectors (norms, biases) moved by N(0, 0.3^2)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            scale = 0.3 if p.ndim == 1 else 1.0 / math.sqrt(p.shape[-1])
            p.add_(torch.randn(p.shape, generator=g) * scale)
    return model.eval()


@dataclasses.dataclass
class Built:
    family: Family
    folder: object
    ids: np.ndarray  # int [T]
    ref: np.ndarray  # float32 [T, V]: reference log-probs, row t predicts ids[t + 1]
    hf_model: object


def reference_model(config_class: str, model_class: str, kwargs: dict, folder, seed: int = 0, attention="eager"):
    """A transformers model of the given classes with every parameter perturbed, saved to folder."""
    config = getattr(transformers, config_class)(**kwargs, attn_implementation=attention)
    torch.manual_seed(seed)
    model = perturb_all_parameters(getattr(transformers, model_class)(config), seed)
    model.save_pretrained(folder)
    return model


def build(family: Family, folder, seed: int = 0) -> Built:
    model = reference_model(family.config_class, family.model_class, family.kwargs, folder, seed)
    ids = np.random.default_rng(seed).integers(3, VOCAB, family.length)
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)[None]).logits[0]
    ref = torch.log_softmax(logits.float(), dim=-1).numpy()
    return Built(family, folder, ids, ref, model)


@pytest.fixture(scope="module")
def built(request, tmp_path_factory):
    name = request.param
    return build(BY_NAME[name], tmp_path_factory.mktemp(name))


def all_positions(b: Built):
    positions = np.arange(1, len(b.ids))
    return positions, np.broadcast_to(np.arange(VOCAB), (len(positions), VOCAB))


def compare(b: Built, result, positions, tokens, label: str) -> float:
    """Assert parity of a read() result with the reference; returns the max abs log-prob difference."""
    expected = np.take_along_axis(b.ref[positions - 1], tokens.reshape(len(positions), -1), axis=1)
    got = result.logprobs.reshape(len(positions), -1)
    assert got.shape == expected.shape and got.dtype == np.float32
    diff = float(np.abs(got - expected).max())
    assert diff <= TOL, f"{label}: max |logprob diff| {diff:.3g} > {TOL}"
    rows = b.ref[positions - 1]
    top2 = np.sort(rows, axis=1)[:, -2:]
    decided = top2[:, 1] - top2[:, 0] > MARGIN
    assert decided.mean() > 0.9, f"{label}: too few positions with a clear top-1 for the check to mean much"
    mismatch = np.flatnonzero(decided & (result.top1 != rows.argmax(axis=1)))
    assert mismatch.size == 0, f"{label}: top-1 differs at positions {positions[mismatch][:10].tolist()}"
    return diff


@pytest.mark.parametrize("backend", ["chunked", "xla"])
@pytest.mark.parametrize("built", [f.name for f in FAMILIES], indirect=True)
def test_parity(built, backend):
    """Full next-token distribution at every position, both attention backends."""
    chunk = built.family.prefill_chunk if backend == "chunked" else 2048
    model = jaxeval.load_model(built.folder, dtype="float32", attention=backend, prefill_chunk=chunk)
    positions, tokens = all_positions(built)
    result = model.read(built.ids, positions, tokens)
    diff = compare(built, result, positions, tokens, f"{built.family.name}/{backend}")
    print(f"\n{built.family.name}/{backend}: max |logprob diff| = {diff:.2e}")


def check_controls(b: Built, controls):
    model = jaxeval.load_model(b.folder, dtype="float32", attention="xla")
    params = model.module.params()
    positions, tokens = all_positions(b)
    for label, mistake in controls:
        config, wrong_params = mistake(model.config, params)
        result = engine_read(wrong_params, config, Runtime(attention="xla", dtype="float32"), b.ids, positions, tokens)
        expected = np.take_along_axis(b.ref[positions - 1], tokens, axis=1)
        moved = float(np.abs(result.logprobs - expected).max())
        assert moved > CONTROL, f"{b.family.name}: '{label}' moves log-probs by only {moved:.3g}"
        print(f"\n{b.family.name}: control '{label}' moves log-probs by {moved:.3g}")


@pytest.mark.parametrize("built", [f.name for f in FAMILIES if f.controls], indirect=True)
def test_parity_controls(built):
    """Negative controls: each deliberate mistake must move the result by > 10x the tolerance.

    This shows the texts are long enough (sliding windows, rope scaling) and the weights random
    enough (soft-caps, biases) for test_parity to catch these mistakes.
    """
    check_controls(built, built.family.controls)


@pytest.mark.slow
@pytest.mark.parametrize("built", [f.name for f in FAMILIES if f.slow_controls], indirect=True)
def test_parity_controls_more(built):
    """More negative controls (each one recompiles the read)."""
    check_controls(built, built.family.slow_controls)


@pytest.mark.parametrize("built", ["llama3", "gemma2"], indirect=True)
def test_read_token_and_candidate_shapes(built):
    """tokens [K] -> logprobs [K]; tokens [K, C] -> [K, C]; unsorted, repeated positions are fine."""
    model = jaxeval.load_model(built.folder, dtype="float32", attention="chunked",
                               prefill_chunk=built.family.prefill_chunk)
    rng = np.random.default_rng(1)
    positions = rng.integers(1, len(built.ids), 77)
    positions[:3] = [len(built.ids) - 1, 1, positions[5]]

    one = model.read(built.ids, positions, built.ids[positions])
    assert one.logprobs.shape == (77,) and one.top1.shape == (77,) and one.top1.dtype == np.int32
    compare(built, one, positions, built.ids[positions], "next token [K]")

    candidates = rng.integers(0, VOCAB, (77, 5))
    many = model.read(built.ids, positions, candidates)
    assert many.logprobs.shape == (77, 5)
    compare(built, many, positions, candidates, "candidates [K, C]")
    np.testing.assert_array_equal(many.top1, one.top1)


@pytest.mark.parametrize("built", ["llama3"], indirect=True)
def test_sharded_safetensors(built, tmp_path):
    """save_pretrained with a small max_shard_size writes an index and several shards: same result."""
    built.hf_model.save_pretrained(tmp_path, max_shard_size="100KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    assert len(list(tmp_path.glob("model-*.safetensors"))) > 2
    assert not (tmp_path / "model.safetensors").exists()
    positions, tokens = all_positions(built)
    sharded = jaxeval.load_model(tmp_path, dtype="float32", attention="xla").read(built.ids, positions, tokens)
    single = jaxeval.load_model(built.folder, dtype="float32", attention="xla").read(built.ids, positions, tokens)
    np.testing.assert_array_equal(sharded.logprobs, single.logprobs)
    np.testing.assert_array_equal(sharded.top1, single.top1)
    compare(built, sharded, positions, tokens, "sharded")


def to_v4_layout(v5: dict) -> dict:
    """The transformers v4 config.json layout of a v5 config, as the hub's Llama 3.1 / Gemma 3 files have it."""
    v4 = {k: v for k, v in v5.items() if k not in ("rope_parameters", "layer_types", "dtype")}
    v4["torch_dtype"], v4["transformers_version"] = "float32", "4.50.0"
    rope = v5["rope_parameters"]
    if v5["model_type"] == "gemma3_text":
        full, local = dict(rope[FULL]), dict(rope[SLIDING])
        v4["rope_theta"], v4["rope_local_base_freq"] = full.pop("rope_theta"), local.pop("rope_theta")
        v4["rope_scaling"] = None if full == {"rope_type": "default"} else full
        pattern = next(i + 1 for i, t in enumerate(v5["layer_types"]) if t == FULL)
        v4["sliding_window_pattern"] = pattern
        assert v5["layer_types"] == [SLIDING if (i + 1) % pattern else FULL for i in range(len(v5["layer_types"]))]
    else:
        rope = dict(rope)
        v4["rope_theta"] = rope.pop("rope_theta")
        v4["rope_scaling"] = None if rope == {"rope_type": "default"} else rope
    return v4


@pytest.mark.parametrize("built", ["llama3", "gemma3"], indirect=True)
def test_v4_config_layout(built, tmp_path):
    """A v4-layout config.json (rope_theta / rope_scaling / rope_local_base_freq) gives the same ModelConfig
    as v5's rope_parameters, transformers agrees the two files describe the same model, and reads match."""
    v5 = json.loads((built.folder / "config.json").read_text())
    assert "rope_parameters" in v5 and "rope_scaling" not in v5  # written by transformers v5
    v4 = to_v4_layout(v5)
    (tmp_path / "config.json").write_text(json.dumps(v4, indent=2))
    shutil.copy(built.folder / "model.safetensors", tmp_path / "model.safetensors")

    # transformers itself reads both layouts as the same model
    hf_v4 = transformers.AutoConfig.from_pretrained(tmp_path)
    hf_v5 = transformers.AutoConfig.from_pretrained(built.folder)
    assert hf_v4.rope_parameters == hf_v5.rope_parameters
    assert getattr(hf_v4, "layer_types", None) == getattr(hf_v5, "layer_types", None)

    config = load_hf_config(tmp_path)
    assert config == load_hf_config(built.folder)
    assert config == config_from_hf(v4) == config_from_hf(v5)
    if built.family.name == "gemma3":
        assert config.rope == RopeConfig(theta=1e6, kind="linear", factor=8.0)
        assert config.rope_local == RopeConfig(theta=10000.0)
        assert config.layer_types == (SLIDING, SLIDING, FULL, SLIDING)
    else:
        assert config.rope.kind == "llama3" and config.rope.original_max_position == 64

    positions, tokens = all_positions(built)  # the shapes test_parity compiled
    a = jaxeval.load_model(tmp_path, dtype="float32", attention="xla").read(built.ids, positions, tokens)
    b = jaxeval.load_model(built.folder, dtype="float32", attention="xla").read(built.ids, positions, tokens)
    np.testing.assert_array_equal(a.logprobs, b.logprobs)
