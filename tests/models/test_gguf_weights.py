"""GGUF checkpoints loaded natively: config from the metadata, tensors dequantized by the gguf package with
llama.cpp's conversions undone (q/k row permutation for llama, 1 + w norms for Gemma).

The default tests write small GGUF files the way llama.cpp's converter does (from random Hugging Face
tensors) and check that jaxeval reads back the Hugging Face model; the `realweights` tests load the two
real GGUF checkpoints from the package registry and compare with transformers' own GGUF loading.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

import jaxeval  # noqa: E402
from jaxeval.errors import CheckpointError  # noqa: E402
from jaxeval.models.config import load_hf_config  # noqa: E402
from jaxeval.weights.gguf_weights import GGUFCheckpoint  # noqa: E402
from jaxeval.weights.hf_weights import load_hf_params  # noqa: E402
from jaxeval.models import quant  # noqa: E402

LLAMA = dict(model_type="llama", vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
             num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
             rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2)


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """What llama.cpp's converter does to Llama q/k rows (its interleaved rope)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_llama_gguf(path: Path, tensors: dict[str, np.ndarray], qtype=gguf.GGMLQuantizationType.F32) -> Path:
    c = LLAMA
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_block_count(c["num_hidden_layers"])
    writer.add_context_length(c["max_position_embeddings"])
    writer.add_embedding_length(c["hidden_size"])
    writer.add_feed_forward_length(c["intermediate_size"])
    writer.add_head_count(c["num_attention_heads"])
    writer.add_head_count_kv(c["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    writer.add_rope_freq_base(c["rope_theta"])
    writer.add_rope_dimension_count(c["head_dim"])
    writer.add_vocab_size(c["vocab_size"])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                 "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, w in tensors.items():
        if name.startswith("model.layers."):
            i, rest = name[len("model.layers."):].split(".", 1)
            hf, kind = rest.rsplit(".", 1)
            target = f"blk.{i}.{per_layer[hf]}.{kind}"
            if hf in ("self_attn.q_proj", "self_attn.k_proj"):
                w = permute(w, c["num_attention_heads"] if "q_proj" in hf else c["num_key_value_heads"])
        else:
            target = names[name]
        if w.ndim == 2 and qtype != gguf.GGMLQuantizationType.F32:
            writer.add_tensor(target, gguf.quants.quantize(w, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(target, w)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def hf_and_gguf(tmp_path):
    helpers = _module("models_conftest", Path(__file__).parent / "conftest.py")  # another conftest may be imported
    hf_llama_tensors, write_hf_folder = helpers.hf_llama_tensors, helpers.write_hf_folder
    tensors = hf_llama_tensors(LLAMA, seed=3)
    folder = write_hf_folder(tmp_path / "hf", LLAMA, tensors)
    return folder, tensors


def test_gguf_reads_back_the_hugging_face_model(hf_and_gguf, tmp_path):
    """F32 GGUF written as llama.cpp converts: the same config and bit-identical parameters as the HF folder."""
    folder, tensors = hf_and_gguf
    file = write_llama_gguf(tmp_path / "m.gguf", tensors)
    checkpoint = GGUFCheckpoint(file)
    config = load_hf_config(folder)
    got = jaxeval.load_model(file, dtype="float32", load_tokenizer=False)
    assert got.config == dataclasses.replace(config, rms_norm_eps=float(np.float32(1e-5)))  # GGUF keeps float32
    want = load_hf_params(folder, config, np.float32)
    for name in want["layers"]:
        np.testing.assert_array_equal(np.asarray(got.module.params()["layers"][name]), want["layers"][name])
    np.testing.assert_array_equal(np.asarray(got.module.params()["lm_head"]), want["lm_head"])
    assert "model.layers.0.self_attn.q_proj.weight" in checkpoint and "model.layers.0.mlp.gate_proj.bias" \
        not in checkpoint


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_0"])
def test_quantized_gguf_equals_its_dequantized_values(hf_and_gguf, tmp_path, qtype):
    """Block-quantized tensors: with dequantize=True the model holds exactly gguf's dequantization of
    them (the permutation undone on the dequantized rows); by default the matmul weights stay in their
    codes on the device (int8 for Q8_0, packed int4 for Q4_0) and the read equals the dequantized one;
    both read like the HF model up to the quantization error."""
    folder, tensors = hf_and_gguf
    qtype = getattr(gguf.GGMLQuantizationType, qtype)
    file = write_llama_gguf(tmp_path / "q.gguf", tensors, qtype)
    dense = jaxeval.load_model(file, dtype="float32", load_tokenizer=False, dequantize=True)
    q = tensors["model.layers.1.self_attn.q_proj.weight"]
    stored = gguf.quants.dequantize(gguf.quants.quantize(permute(q, 4), qtype), qtype)
    expected = stored.reshape(4, 4, 2, 32).swapaxes(1, 2).reshape(32, 32).T.reshape(32, 4, 8)  # un-permuted
    np.testing.assert_array_equal(np.asarray(dense.module.params()["layers"]["wq"][1]), expected)
    kept = jaxeval.load_model(file, dtype="float32", load_tokenizer=False)
    wq = kept.module.params()["layers"]["wq"]
    assert kept.quantization == "gguf-blocks" and dense.quantization is None
    assert quant.is_quantized(wq) and wq.kind == ("int8" if qtype.name == "Q8_0" else "int4")
    layer1 = jax.tree.map(lambda a: a[1], wq)
    np.testing.assert_allclose(np.asarray(quant.dense_weight(layer1, np.float32)), expected, rtol=2 ** -23, atol=0)
    assert kept.fingerprint != dense.fingerprint
    reference = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    ids = np.random.default_rng(0).integers(3, 64, 200)
    a, b, c = (m.read(ids, np.arange(1, 200), ids[1:]).logprobs for m in (kept, dense, reference))
    np.testing.assert_allclose(a, b, atol=1e-6)
    bound = {"Q8_0": 0.2, "Q4_0": 2.5}[qtype.name]  # per weight ~0.4% (Q8_0), ~7% (Q4_0), on random weights
    assert 1e-5 < float(np.abs(b - c).max()) < bound


def test_bad_gguf_files_name_the_file(tmp_path, hf_and_gguf):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file at all")
    with pytest.raises(CheckpointError, match="junk.gguf: not a readable GGUF file"):
        jaxeval.load_model(junk, dtype="float32", load_tokenizer=False)
    writer = gguf.GGUFWriter(str(tmp_path / "rwkv.gguf"), arch="rwkv6")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(CheckpointError, match="rwkv.gguf: GGUF architecture 'rwkv6' is not supported"):
        jaxeval.load_model(tmp_path / "rwkv.gguf", dtype="float32", load_tokenizer=False)
    two = tmp_path / "two"
    two.mkdir()
    for name in ("a.gguf", "b.gguf"):
        (two / name).write_bytes(b"x")
    with pytest.raises(CheckpointError, match="several .gguf files"):
        jaxeval.load_model(two, dtype="float32")


def _module(name: str, path: Path):
    """Import a file by path under its own name (test helpers and scripts are not packages)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _real_gguf(name: str, tmp_path_factory) -> Path:
    real = _module("build_real_models", Path(__file__).parents[2] / "scripts" / "build_real_models.py")

    model = real.MODELS[name]
    try:
        parts = real.gguf_parts(model)
    except real.BuildError as e:
        pytest.skip(str(e))
    return real.assemble_gguf(model, parts, tmp_path_factory.mktemp("gguf"))


@pytest.mark.realweights
@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m"])
def test_real_gguf_equals_transformers_dequantization(name, tmp_path_factory):
    """The real Q4_1 SmolLM2 and Q4_K_M Gemma 3 GGUF files: jaxeval's own loading gives the config, every
    parameter (bit for bit) and the tokenizer that transformers' GGUF loading + save_pretrained gives."""
    out = Path(os.environ.get("JAXEVAL_REAL_MODELS", "~/.cache/jaxeval/real_models")).expanduser() / name
    if not (out / "build_info.json").is_file():
        pytest.skip(f"{out}: not built (python scripts/build_real_models.py)")
    file = _real_gguf(name, tmp_path_factory)
    ours = jaxeval.load_model(file, dtype="float32", dequantize=True)
    theirs = jaxeval.load_model(out, dtype="float32")
    assert ours.config == theirs.config
    for (path, a), b in zip(_leaves(ours.module.params()), _leaves(theirs.module.params())):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b[1]), err_msg=path)
    kept = jaxeval.load_model(file, dtype="float32", load_tokenizer=False)  # the block codes on the device
    for name, w in kept.module.params()["layers"].items():
        if quant.is_quantized(w):
            rebuilt = jax.vmap(quant.dense_weight, in_axes=(0, None))(w, np.float32)
            np.testing.assert_allclose(np.asarray(rebuilt), np.asarray(theirs.module.params()["layers"][name]),
                                       rtol=2 ** -23, atol=0, err_msg=name)
    text = "The tower is 324 metres tall, about the same height as an 81-storey building."
    assert ours.tokenizer(text).input_ids == theirs.tokenizer(text).input_ids
    assert ours.tokenizer.chat_template == theirs.tokenizer.chat_template


def _leaves(tree, prefix=""):
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree) for leaf in _leaves(tree[key], f"{prefix}/{key}")]
    return [(prefix, tree)]
