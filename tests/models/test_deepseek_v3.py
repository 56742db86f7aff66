"""DeepSeek-V3 against transformers' DeepseekV3ForCausalLM, float32: multi-head latent attention (absorbed,
its cache the latent), YaRN with the mscale softmax scale, group-limited sigmoid routing with shared experts,
and first_k_dense_replace dense layers before the MoE layers (two layer stacks)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import jax
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from jaxeval.engine.read import new_read_cache, read  # noqa: E402
from jaxeval.engine.runtime import Runtime  # noqa: E402
from jaxeval.errors import ConfigError  # noqa: E402
from jaxeval.weights.orbax import save_checkpoint  # noqa: E402
from jaxeval.models.config import config_from_hf  # noqa: E402
from jaxeval.models.kv_policy import check_supported, from_flags  # noqa: E402
from moe_checks import eight_devices_equal_one  # noqa: E402

TOL = 1e-4
VOCAB = 256
# DeepSeek-V3's rope_scaling, its factor and context scaled down (mscale_all_dim set: the softmax scale
# is multiplied by yarn_get_mscale(factor, 1) ** 2)
YARN = {"type": "yarn", "factor": 8.0, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096, "rope_theta": 10000.0}
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, moe_intermediate_size=32, num_hidden_layers=3,
              num_attention_heads=4, num_key_value_heads=4, n_routed_experts=8, n_group=4, topk_group=2,
              num_experts_per_tok=3, n_shared_experts=2, first_k_dense_replace=1, kv_lora_rank=16,
              qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, max_position_embeddings=32768, eos_token_id=2,
              rope_scaling=YARN)
# q_lora_rank null (a plain q_proj) with the half-split rope; set (q_a_proj, q_a_layernorm, q_b_proj) with
# DeepSeek-V3's interleaved rope
VARIANTS = {"q_proj": dict(q_lora_rank=None, rope_interleave=False),
            "q_lora": dict(q_lora_rank=24, rope_interleave=True)}


def perturb(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            base = 1.0 if "norm" in name else 0.0
            p.copy_(base + torch.randn(p.shape, generator=gen) * (0.3 if "norm" in name else 0.1))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):  # the selection's bias (zeros at init)
                b.copy_(torch.randn(b.shape, generator=gen) * 0.1)
    return model.eval()


def build(folder, variant: str, seed: int = 0, **extra):
    config = transformers.DeepseekV3Config(**{**CONFIG, **VARIANTS[variant], **extra})
    torch.manual_seed(seed)
    model = perturb(transformers.DeepseekV3ForCausalLM(config), seed)
    model.save_pretrained(folder)  # per-expert tensors, as the hub's
    return model


@pytest.fixture(scope="module", params=list(VARIANTS))
def reference(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(f"deepseek_v3_{request.param}")
    return build(folder, request.param), folder


def reference_logprobs(model, ids):
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)[None]).logits[0, :-1]
    return torch.log_softmax(logits, -1).gather(-1, torch.as_tensor(ids[1:])[:, None])[:, 0].numpy()


def test_read_and_greedy_generation_match_transformers(reference):
    torch_model, folder = reference
    ids = np.random.default_rng(0).integers(3, VOCAB, 1024)
    ref = reference_logprobs(torch_model, ids)
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=512)
    c = model.config
    assert c.rope_interleaved == torch_model.config.rope_interleave
    assert c.query_scale == pytest.approx(torch_model.model.layers[0].self_attn.scaling, rel=1e-12)
    # the cache: one KV head of [k_rope, c_kv] per token, no values
    k, v = new_read_cache(c, Runtime(dtype="float32"), 64)
    assert k.shape == (3, 1, 64, 1, 8 + 16) and v.shape == (3, 1, 64, 1, 0)
    positions = np.arange(1, len(ids))
    diff = np.abs(model.read(ids, positions, ids[positions]).logprobs - ref)
    print(f"deepseek_v3 {c.mla}: max |d log p| {diff.max():.2e} at {ids.size}")
    assert diff.max() <= TOL
    # control: the other rope pairing (interleaved variant), the softmax scale without YaRN's mscale (the
    # other), is far off
    wrong = (dataclasses.replace(c, rope_interleaved=False) if c.rope_interleaved
             else dataclasses.replace(c, query_scale=c.mla.qk_head_dim ** -0.5))
    other = read(model.module.params(), wrong, Runtime(dtype="float32"), ids[:512], positions[:511],
                 ids[1:512]).logprobs
    assert np.abs(other - ref[:511]).max() > 100 * TOL

    prompts = [ids[:200], ids[500:537]]
    outs = model.generate([p.tolist() for p in prompts], max_new_tokens=16)
    for prompt, out in zip(prompts, outs):
        with torch.no_grad():
            want = torch_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=16, do_sample=False,
                                        pad_token_id=0)[0, len(prompt):].tolist()
        assert out.tokens == want


def test_config_fields():
    raw = {**CONFIG, "model_type": "deepseek_v3", "q_lora_rank": None}
    c = config_from_hf(raw)
    assert (c.num_kv_heads, c.head_dim, c.rotary_dim, c.value_dim, c.dense_layers) == (1, 24, 8, 0, 1)
    assert (c.moe.family, c.moe.n_group, c.moe.topk_group, c.moe.routed_scaling_factor) == ("deepseek_v3", 4, 2, 2.5)
    assert (c.moe_intermediate_size, c.shared_expert_intermediate_size) == (32, 64)
    assert config_from_hf({**raw, "first_k_dense_replace": 0}).dense_layers == 0
    every = config_from_hf({**raw, "first_k_dense_replace": 3})  # every layer dense: no experts
    assert every.moe is None and every.dense_layers == 0
    assert config_from_hf({k: v for k, v in raw.items() if k != "q_lora_rank"}).mla.q_lora_rank == 1536  # class default
    # the default rope: no mscale on the softmax scale
    assert config_from_hf({**raw, "rope_scaling": None}).query_scale == 16 ** -0.5
    assert type(c).from_json(c.to_json()) == c


@pytest.mark.parametrize("field,value,message", [
    ("num_key_value_heads", 2, "'num_key_value_heads'=2 must equal num_attention_heads=4"),
    ("q_lora_rank", 0, "'q_lora_rank'=0 must be null or a positive integer"),
    ("qk_rope_head_dim", 7, "'qk_rope_head_dim'=7 must be even"),
    ("kv_lora_rank", None, None),  # null: the class default (512), accepted
    ("n_group", 3, "'n_group'=3 must divide n_routed_experts=8"),
    ("n_group", 8, "into groups of at least 2 experts"),
    ("topk_group", 5, "'topk_group'=5 exceeds n_group=4"),
    ("num_experts_per_tok", 5, "'num_experts_per_tok'=5 exceeds the 4 experts"),
    ("first_k_dense_replace", 4, "'first_k_dense_replace'=4 exceeds num_hidden_layers=3"),
    ("hidden_act", "gelu_pytorch_tanh", "'hidden_act'='gelu_pytorch_tanh' is not supported for model_type='deepseek"),
    ("norm_topk_prob", "yes", "'norm_topk_prob'='yes' must be true or false"),
    ("attention_bias", True, "'attention_bias'=True is not supported"),
])
def test_config_errors(field, value, message):
    raw = {**CONFIG, "model_type": "deepseek_v3", field: value}
    if message is None:
        assert config_from_hf(raw).mla.kv_lora_rank == 512
        return
    with pytest.raises(ConfigError, match=message):
        config_from_hf(raw)


def test_compressed_cache_refuses_kv_policies():
    c = config_from_hf({**CONFIG, "model_type": "deepseek_v3"})
    with pytest.raises(ConfigError, match="kv_cache=int8: not supported for model_type='deepseek_v3'"):
        check_supported(from_flags("int8"), c, None, "chunked")


def test_quantized_weights_refused(reference, tmp_path):
    """Quantized weights are held for the one-stack attention and MLP only: int8 at load and an FP8 checkpoint
    (DeepSeek-V3's hub format) are refused before anything is read."""
    _, folder = reference
    with pytest.raises(ConfigError, match="int8: quantized weights are not supported for model_type='deepseek_v3'"):
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, quantize="int8")
    shutil.copytree(folder, tmp_path / "fp8")
    raw = json.loads((folder / "config.json").read_text())
    raw["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128],
                                  "activation_scheme": "dynamic"}
    (tmp_path / "fp8" / "config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="fp8: quantized weights are not supported"):
        jaxeval.load_model(tmp_path / "fp8", dtype="float32", load_tokenizer=False)


def test_orbax_checkpoint_round_trip(reference, tmp_path):
    """save_checkpoint holds both layer stacks ("dense_layers", "layers"); loading it gives the HF folder's model."""
    _, folder = reference
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=256)
    save_checkpoint(tmp_path / "ckpt", model.module.params(), json.loads((folder / "config.json").read_text()),
                    "float32")
    again = jaxeval.load_model(tmp_path / "ckpt", dtype="float32", load_tokenizer=False, prefill_chunk=256)
    want, got = model.module.params(), again.module.params()
    assert again.config == model.config and set(got) == set(want) >= {"dense_layers", "layers"}
    assert all(jax.tree.leaves(jax.tree.map(np.array_equal, got, want)))


def test_eight_devices_equal_one(tmp_path):
    """data x expert x tensor = 2 x 2 x 2 simulated devices (a subprocess: JAX fixes its device count at start):
    query heads and the latent projections' heads split over tensor, the one latent KV head replicated
    (DeepSeek-V3's layout: q_lora_rank set, interleaved rope), the routed experts expert-parallel with
    group-limited routing."""
    folder = tmp_path
    build(folder, "q_lora", seed=2)
    diff, top1_same, tokens_same = eight_devices_equal_one(folder, VOCAB, mesh="data=2,expert=2,tensor=2")
    assert diff < 1e-5 and top1_same and tokens_same


@pytest.mark.long
def test_long_parity_16k(tmp_path):
    """16,384 positions through eight 2,048-token prefill chunks (the reference: transformers through its own
    latent cache, 2,048 tokens at a time), past YaRN's original context of 4,096."""
    from test_long_parity import reference_logits, windows

    torch_model = build(tmp_path, "q_lora", seed=1)
    ids = np.random.default_rng(1).integers(3, VOCAB, 16384)
    with torch.no_grad():
        logits = reference_logits(torch_model, ids, chunked=True)[:-1]
    ref = torch.log_softmax(logits, -1).gather(1, torch.as_tensor(ids[1:])[:, None])[:, 0].numpy()
    model = jaxeval.load_model(tmp_path, dtype="float32", load_tokenizer=False, prefill_chunk=2048)
    positions = np.arange(1, ids.size)
    diff = np.abs(model.read(ids, positions, ids[positions]).logprobs - ref)
    print(f"\ndeepseek_v3 16k: max |dlogprob| {diff.max():.2e} past 8k {diff[8192:].max():.2e} [{windows(diff)}]")
    assert diff.max() <= TOL
