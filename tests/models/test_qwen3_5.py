"""Qwen3.5 dense (Gated DeltaNet + gated full attention) against transformers' Qwen3_5ForCausalLM, float32.

A tiny random config of six layers (linear, linear, full, twice: the scan runs two groups) with every
parameter perturbed, saved with save_pretrained (safetensors). Each case reads every position through
several prefill chunks (K/V and Gated DeltaNet states carried from chunk to chunk) and compares
log p(next token) with transformers' one forward over the same ids; greedy generation is compared with
transformers' generate (its cache holds the same states); shared-prefix reads with separate reads.
"""

from __future__ import annotations

import json
import shutil
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from jaxeval.weights.loader import convert  # noqa: E402
from jaxeval.errors import ConfigError  # noqa: E402
from jaxeval.models.config import config_from_hf  # noqa: E402
from jaxeval.models.hybrid_layout import check_hybrid_mesh, layer_groups  # noqa: E402
from jaxeval.models.mesh import MeshError  # noqa: E402

TOL = 1e-4
VOCAB = 256
LIN, FULL = "linear_attention", "full_attention"
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=6, num_attention_heads=4,
              num_key_value_heads=2, head_dim=32, linear_num_key_heads=2, linear_num_value_heads=4,
              linear_key_head_dim=16, linear_value_head_dim=16, linear_conv_kernel_dim=4,
              max_position_embeddings=65536, layer_types=[LIN, LIN, FULL] * 2, eos_token_id=2,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
                               "mrope_section": [1, 1, 2]})


def perturb(model, seed=0):
    """Every parameter random (the default init leaves norms at 0 and weights tiny); A_log and dt_bias give
    per-token decays of 0.5-5%, so the recurrent state carries information across many chunks."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(torch.rand(p.shape, generator=gen) * 0.09 + 0.01))
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3 - 2.0)
            elif name.endswith("linear_attn.norm.weight"):  # the gated norm scales by w
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            elif "norm" in name:  # every other norm scales by 1 + w
                p.copy_(0.3 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    return model.eval()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """(transformers model, its save_pretrained folder)."""
    config = transformers.Qwen3_5TextConfig(**CONFIG)
    torch.manual_seed(0)
    model = perturb(transformers.Qwen3_5ForCausalLM(config))
    folder = tmp_path_factory.mktemp("qwen3_5")
    model.save_pretrained(folder)
    return model, folder


def reference_logprobs(model, ids) -> np.ndarray:
    """log p(ids[t]) after ids[:t], t = 1 .. T-1, from one transformers forward."""
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)[None]).logits[0, :-1]
    return torch.log_softmax(logits.float(), -1).gather(-1, torch.as_tensor(ids[1:])[:, None])[:, 0].numpy()


def every_position(model, ids):
    positions = np.arange(1, len(ids))
    return model.read(ids, positions, ids[positions]).logprobs


def test_layer_groups_scan_the_repeating_pattern():
    g = layer_groups(tuple(CONFIG["layer_types"]))
    assert (g.pattern, g.groups, g.full_layers, g.linear_layers) == ((LIN, LIN, FULL), 2, 2, 4)
    qwen = layer_groups(tuple([LIN, LIN, LIN, FULL] * 8))  # Qwen3.5's default: 32 layers, 8 groups of 4
    assert (qwen.groups, len(qwen.pattern)) == (8, 4)
    assert layer_groups((LIN, FULL, LIN)).groups == 1  # no period divides the depth: one group


@pytest.mark.parametrize("length", [4096, pytest.param(16384, marks=pytest.mark.long)])
def test_read_matches_transformers(reference, length):
    """Every position of a long read, in chunks of 1024 (4k) or 2048 (16k), against one transformers forward."""
    torch_model, folder = reference
    ids = np.random.default_rng(length).integers(3, VOCAB, length)
    ref = reference_logprobs(torch_model, ids)
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=min(2048, length // 4))
    got = every_position(model, ids)
    diff = np.abs(got - ref)
    print(f"qwen3_5 {length}: max |d log p| {diff.max():.2e} (past {length // 2}: {diff[length // 2:].max():.2e})")
    assert diff.max() <= TOL


def test_chunked_read_equals_one_shot_and_controls(reference):
    torch_model, folder = reference
    ids = np.random.default_rng(1).integers(3, VOCAB, 1024)
    ref = reference_logprobs(torch_model, ids)
    one_shot = every_position(jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=1024),
                              ids)
    chunked = every_position(jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=128),
                             ids)
    assert np.abs(chunked - one_shot).max() <= 5e-5 and np.abs(one_shot - ref).max() <= TOL
    # control: the reference with the GDN states dropped at each chunk boundary differs far beyond TOL
    with torch.no_grad():
        pieces = [torch_model(torch.as_tensor(ids[i:i + 128])[None]).logits[0] for i in range(0, 1024, 128)]
    dropped = torch.log_softmax(torch.cat(pieces)[:-1], -1).gather(-1, torch.as_tensor(ids[1:])[:, None])[:, 0]
    assert np.abs(dropped.numpy() - ref).max() > 100 * TOL


def test_greedy_generation_equals_transformers(reference):
    torch_model, folder = reference
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=128)
    rng = np.random.default_rng(2)
    prompts = [rng.integers(3, VOCAB, n) for n in (300, 1, 77)]  # rows of different lengths decode together
    outs = model.generate([p.tolist() for p in prompts], max_new_tokens=24)
    for prompt, out in zip(prompts, outs):
        with torch.no_grad():
            ref = torch_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=24, do_sample=False,
                                       pad_token_id=0)[0, len(prompt):].tolist()
        assert out.tokens == ref  # both stop after EOS (id 2), or at 24 tokens
    assert any(len(out.tokens) == 24 for out in outs)


def test_shared_prefix_reads_equal_separate_reads(reference):
    _, folder = reference
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=256)
    rng = np.random.default_rng(3)
    prefix = rng.integers(3, VOCAB, 700)
    texts = [np.concatenate([prefix, rng.integers(3, VOCAB, n)]) for n in (300, 500)]
    requests = [(t, np.arange(600, len(t)), t[600:]) for t in texts]
    shared = model.read_many(requests)
    assert shared.prefixes == 1 and shared.tokens_run < shared.tokens_naive
    for (ids, positions, tokens), got in zip(requests, shared.results):
        alone = model.read(ids, positions, tokens)
        assert np.array_equal(got.logprobs, alone.logprobs) and np.array_equal(got.top1, alone.top1)


def test_orbax_copy_and_multimodal_text_tower_read_the_same(reference, tmp_path):
    torch_model, folder = reference
    ids = np.random.default_rng(4).integers(3, VOCAB, 512)
    base = every_position(jaxeval.load_model(folder, dtype="float32", load_tokenizer=False, prefill_chunk=128), ids)
    assert np.abs(base - reference_logprobs(torch_model, ids)).max() <= TOL

    orbax = convert(folder, tmp_path / "orbax")
    got = every_position(jaxeval.load_model(orbax, dtype="float32", load_tokenizer=False, prefill_chunk=128), ids)
    assert np.array_equal(got, base)

    # Qwen3_5ForConditionalGeneration's layout: the text tower under model.language_model., a vision tower
    # (not read), config.json with text_config
    from safetensors.numpy import load_file, save_file

    vlm = tmp_path / "vlm"
    vlm.mkdir()
    tensors = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
               for k, v in load_file(folder / "model.safetensors").items()}
    tensors["model.visual.patch_embed.proj.weight"] = np.zeros((4, 3), np.float32)
    save_file(tensors, str(vlm / "model.safetensors"))
    text = json.loads((folder / "config.json").read_text())
    (vlm / "config.json").write_text(json.dumps({"model_type": "qwen3_5", "architectures":
                                                 ["Qwen3_5ForConditionalGeneration"], "text_config": text,
                                                 "vision_config": {"depth": 1}, "tie_word_embeddings": False}))
    got = every_position(jaxeval.load_model(vlm, dtype="float32", load_tokenizer=False, prefill_chunk=128), ids)
    assert np.array_equal(got, base)
    shutil.rmtree(vlm)


def test_a_context_axis_is_refused():
    """Meshes without a context axis run (tests/models/test_hybrid_mesh.py); context parallelism is refused."""
    c = config_from_hf(_raw())
    check_hybrid_mesh(c, types.SimpleNamespace(shape={"data": 1, "fsdp": 1, "tensor": 2, "context": 1}))
    with pytest.raises(MeshError, match="model_type='qwen3_5_text' .*does not run context-parallel"):
        check_hybrid_mesh(c, types.SimpleNamespace(shape={"data": 1, "fsdp": 1, "tensor": 1, "context": 2}))


def _raw(**changes):
    raw = {**CONFIG, "model_type": "qwen3_5_text", **changes}
    return {k: v for k, v in raw.items() if v is not None}


def test_config_reading_and_errors():
    c = config_from_hf(_raw(layer_types=None))  # no layer_types: full attention every 4th layer
    assert c.layer_types == (LIN, LIN, LIN, FULL, LIN, LIN)
    assert config_from_hf(_raw(layer_types=None, full_attention_interval=2)).layer_types == (LIN, FULL) * 3
    assert c.rotary_dim == 8 and c.norm_plus_one and c.qk_norm and c.attention_output_gate
    assert c.linear_attention.num_v_heads == 4
    assert config_from_hf(_raw(linear_conv_kernel_dim=None)).linear_attention.conv_kernel == 4  # class default
    with pytest.raises(ConfigError, match="'linear_num_value_heads'=3 is not a multiple"):
        config_from_hf(_raw(linear_num_value_heads=3))
    with pytest.raises(ConfigError, match="'linear_key_head_dim'=0"):
        config_from_hf(_raw(linear_key_head_dim=0))
    with pytest.raises(ConfigError, match="'layer_types' has unsupported entry 'sliding_attention'"):
        config_from_hf(_raw(layer_types=[LIN, "sliding_attention"] * 3))
    with pytest.raises(ConfigError, match="'attention_bias'"):
        config_from_hf(_raw(attention_bias=True))
    with pytest.raises(ConfigError, match="'text_config' is None"):
        config_from_hf({"model_type": "qwen3_5"})
    tied = config_from_hf({"model_type": "qwen3_5", "text_config": _raw(tie_word_embeddings=False),
                           "tie_word_embeddings": True})
    assert tied.tie_word_embeddings  # the composite config's tying, as Qwen3_5ForConditionalGeneration
