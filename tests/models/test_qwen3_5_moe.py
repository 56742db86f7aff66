"""Qwen3.5-MoE (the Qwen3.5 hybrid with every MLP the routed experts plus the sigmoid-gated shared expert)
against transformers' Qwen3_5MoeForCausalLM, float32.

A tiny random config of six layers (linear, linear, full, twice), 8 experts of which 2 are routed per token,
every parameter perturbed, saved with save_pretrained (one tensor per expert). Reads go through several
prefill chunks (K/V and Gated DeltaNet states carried across); greedy generation is compared with
transformers' generate; shared-prefix reads with separate reads; the fused-expert and conditional-generation
layouts with the save_pretrained one.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from jaxeval.engine.read import read  # noqa: E402
from jaxeval.engine.runtime import Runtime  # noqa: E402
from jaxeval.errors import ConfigError  # noqa: E402
from jaxeval.models.config import config_from_hf  # noqa: E402

from test_qwen3_5 import CONFIG as DENSE, every_position, perturb, reference_logprobs  # noqa: E402

TOL = 1e-4
VOCAB = DENSE["vocab_size"]
CONFIG = {**{k: v for k, v in DENSE.items() if k != "intermediate_size"}, "num_experts": 8, "num_experts_per_tok": 2,
          "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(transformers model, its save_pretrained folder)."""
    config = transformers.Qwen3_5MoeTextConfig(**CONFIG)
    torch.manual_seed(0)
    model = perturb(transformers.Qwen3_5MoeForCausalLM(config), seed=1)
    folder = tmp_path_factory.mktemp("qwen3_5_moe")
    model.save_pretrained(folder)  # one tensor per expert
    return model, folder


@pytest.fixture(scope="module")
def model(reference):
    return jaxeval.load_model(reference[1], dtype="float32", load_tokenizer=False, prefill_chunk=512)


def reference_with_router_margins(model, ids):
    """(log p(ids[t]) after ids[:t] from one transformers forward, per input token the smallest gap over layers
    between the k-th and the (k+1)-th routing probability of transformers' router)."""
    k, gaps = model.config.num_experts_per_tok, []

    def hook(module, inputs, outputs):
        top = torch.topk(torch.softmax(outputs[0].float(), -1), k + 1, dim=-1).values
        gaps.append((top[:, k - 1] - top[:, k]).numpy())

    handles = [layer.mlp.gate.register_forward_hook(hook) for layer in model.model.layers]
    try:
        ref = reference_logprobs(model, ids)
    finally:
        for h in handles:
            h.remove()
    return ref, np.min(np.stack(gaps), axis=0)


@pytest.mark.parametrize("length", [2048, pytest.param(4096, marks=pytest.mark.long),
                                    pytest.param(16384, marks=pytest.mark.long)])
def test_read_matches_transformers(reference, length):
    """Every position of a long read in four (2k, 4k) or eight (16k) prefill chunks, against one transformers
    forward; the control routes without renormalising and without the shared expert (Qwen3-MoE's router).

    A token whose k-th and (k+1)-th routing probabilities tie (gap < 1e-6: 1 token of the 2k text, 2 of the 4k,
    1 of the 16k, an exact tie at token 11527) may take either expert, as tie-breaking decides: its prediction
    is left out, and counted."""
    torch_model, folder = reference
    ids = np.random.default_rng(length).integers(3, VOCAB, length)
    ref, gaps = reference_with_router_margins(torch_model, ids)
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=min(2048, length // 4))
    assert (model.config.moe.family, model.config.moe.num_experts, model.config.intermediate_size) == \
        ("qwen3_5_moe", 8, 48)
    diff = np.abs(every_position(model, ids) - ref)
    tie = gaps[:-1] < 1e-6  # diff[t] predicts ids[t + 1] from the states of tokens .. t
    print(f"qwen3_5_moe {length}: max |d log p| {diff[~tie].max():.2e} (past {length // 2}: "
          f"{diff[length // 2:][~tie[length // 2:]].max():.2e}); {tie.sum()} routing ties left out, "
          f"max there {diff[tie].max() if tie.any() else 0:.2e}")
    assert tie.sum() <= 2 and diff[~tie].max() <= TOL
    if length == 2048:  # its one near-tie (gap < 1e-6) routes as transformers': every position within TOL
        assert diff.max() <= TOL
        other = dataclasses.replace(model.config, moe=dataclasses.replace(model.config.moe, family="qwen3_moe",
                                                                          norm_topk_prob=False))
        positions = np.arange(1, 512)
        control = read(model.module.params(), other, Runtime(dtype="float32"), ids[:512], positions,
                       ids[positions]).logprobs
        assert np.abs(control - ref[:511]).max() > 100 * TOL


@pytest.mark.slow  # ~35 s: the batched decode's compile
def test_greedy_generation_equals_transformers(reference, model):
    torch_model, _ = reference
    rng = np.random.default_rng(2)
    prompts = [rng.integers(3, VOCAB, n) for n in (300, 1, 77)]  # rows of different lengths decode together
    outs = model.generate([p.tolist() for p in prompts], max_new_tokens=24)
    for prompt, out in zip(prompts, outs):
        with torch.no_grad():
            ref = torch_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=24, do_sample=False,
                                       pad_token_id=0)[0, len(prompt):].tolist()
        assert out.tokens == ref
    assert any(len(out.tokens) == 24 for out in outs)


@pytest.mark.slow  # ~30 s: one compile per prefix and suffix shape
def test_shared_prefix_reads_equal_separate_reads(model):
    rng = np.random.default_rng(3)
    prefix = rng.integers(3, VOCAB, 1100)
    texts = [np.concatenate([prefix, rng.integers(3, VOCAB, n)]) for n in (300, 500)]
    requests = [(t, np.arange(1024, len(t)), t[1024:]) for t in texts]
    shared = model.read_many(requests)
    assert shared.prefixes == 1 and shared.tokens_run < shared.tokens_naive
    for (ids, positions, tokens), got in zip(requests, shared.results):
        alone = model.read(ids, positions, tokens)
        assert np.array_equal(got.logprobs, alone.logprobs) and np.array_equal(got.top1, alone.top1)


def test_fused_experts_and_conditional_generation_layout_read_the_same(reference, model, tmp_path):
    """Qwen3_5MoeForConditionalGeneration's layout: the text tower under model.language_model., experts fused
    (mlp.experts.gate_up_proj [E, 2I, D], mlp.experts.down_proj [E, D, I]), config.json with text_config."""
    from safetensors.numpy import load_file, save_file

    _, folder = reference
    ids = np.random.default_rng(4).integers(3, VOCAB, 512)
    base = every_position(model, ids)
    tensors = load_file(folder / "model.safetensors")
    fused, E = {}, CONFIG["num_experts"]
    for name, w in tensors.items():
        if ".mlp.experts." not in name:
            fused["model.language_model." + name[len("model."):] if name.startswith("model.") else name] = w
    for i in range(CONFIG["num_hidden_layers"]):
        p = f"model.layers.{i}.mlp.experts."
        stack = lambda proj: np.stack([tensors[f"{p}{e}.{proj}.weight"] for e in range(E)])
        q = f"model.language_model.layers.{i}.mlp.experts."
        fused[q + "gate_up_proj"] = np.concatenate([stack("gate_proj"), stack("up_proj")], axis=1)
        fused[q + "down_proj"] = stack("down_proj")
    fused["model.visual.patch_embed.proj.weight"] = np.zeros((4, 3), np.float32)
    vlm = tmp_path / "vlm"
    vlm.mkdir()
    save_file(fused, str(vlm / "model.safetensors"))
    text = json.loads((folder / "config.json").read_text())
    (vlm / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe", "architectures":
                                                 ["Qwen3_5MoeForConditionalGeneration"], "text_config": text,
                                                 "vision_config": {"depth": 1}, "tie_word_embeddings": False}))
    other = jaxeval.load_model(vlm, dtype="float32", load_tokenizer=False, prefill_chunk=512)
    assert other.config.model_type == "qwen3_5_moe_text"
    assert np.array_equal(every_position(other, ids), base)


def _raw(**changes):
    raw = {**CONFIG, "model_type": "qwen3_5_moe_text", **changes}
    return {k: v for k, v in raw.items() if v is not None}


def test_config_reading_and_errors():
    c = config_from_hf(_raw())
    assert (c.moe.family, c.moe.num_experts, c.moe.top_k, c.moe_intermediate_size, c.intermediate_size) == \
        ("qwen3_5_moe", 8, 2, 32, 48)
    assert c.linear_attention.num_v_heads == 4 and c.attention_output_gate and c.rotary_dim == 8
    # Qwen3_5MoeTextConfig's defaults for the fields a config.json leaves out
    d = config_from_hf(_raw(num_experts=None, num_experts_per_tok=None, moe_intermediate_size=None,
                            shared_expert_intermediate_size=None))
    assert (d.moe.num_experts, d.moe.top_k, d.moe_intermediate_size, d.intermediate_size) == (256, 8, 512, 512)
    with pytest.raises(ConfigError, match="'num_experts_per_tok'=9 exceeds num_experts=8"):
        config_from_hf(_raw(num_experts_per_tok=9))
    with pytest.raises(ConfigError, match="'shared_expert_intermediate_size'=0 must be a positive integer"):
        config_from_hf(_raw(shared_expert_intermediate_size=0))
    with pytest.raises(ConfigError, match="'text_config' is None"):
        config_from_hf({"model_type": "qwen3_5_moe"})
    tied = config_from_hf({"model_type": "qwen3_5_moe", "text_config": _raw(), "tie_word_embeddings": True})
    assert tied.tie_word_embeddings and tied.moe.family == "qwen3_5_moe"
