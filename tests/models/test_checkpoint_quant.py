"""Quantized safetensors checkpoints (GPTQ, AWQ, compressed-tensors, FP8): jaxeval/weights/checkpoint_quant.py.

Each test writes a tiny random Llama's linear layers in a method's own layout (packed by the
formats' rules: AutoGPTQ's and AutoAWQ's word orders, compressed-tensors' own pack_to_int32 when
installed), and beside it a float folder holding the weights those codes stand for. The quantized
folder must load with the codes on the device and read exactly as the float folder does.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import jaxeval
from jaxeval.errors import ConfigError
from jaxeval.models import quant
from jaxeval.weights.checkpoint_quant import AWQ_ORDER

safetensors_numpy = pytest.importorskip("safetensors.numpy")
LINEARS = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
           "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
GROUP = 128


CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 512, "hidden_size": 256,
          "intermediate_size": 384, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 64, "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "hidden_act": "silu",
          "tie_word_embeddings": False, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}


def _pack(values: np.ndarray, axis: int, order=tuple(range(8))) -> np.ndarray:
    """4-bit values -> int32 words along `axis`: value order[k] of each 8 in bits 4k..4k+3."""
    v = np.moveaxis(values.astype(np.uint32), axis, 0)
    v = v.reshape(v.shape[0] // 8, 8, *v.shape[1:])
    words = sum(v[:, order[k]] << np.uint32(4 * k) for k in range(8))
    return np.moveaxis(words.astype(np.uint32).view(np.int32), 0, axis)


def _write(folder: Path, tensors: dict, quantization_config: dict | None):
    """A HF folder: config.json (with quantization_config) and model.safetensors (torch tensors for FP8)."""
    folder.mkdir(parents=True)
    if any(not isinstance(v, np.ndarray) for v in tensors.values()):
        torch = pytest.importorskip("torch")
        from safetensors.torch import save_file

        save_file({k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
                   for k, v in tensors.items()}, str(folder / "model.safetensors"))
    else:
        safetensors_numpy.save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()},
                                    str(folder / "model.safetensors"))
    config = dict(CONFIG, **({"quantization_config": quantization_config} if quantization_config else {}))
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _linears(tensors):
    return [name[:-len(".weight")] for name in tensors if name.endswith(".weight") and any(l in name for l in LINEARS)]


def _gptq(base, w, rng, out, dense):
    n_out, n_in = w.shape
    q = rng.integers(0, 16, (n_in, n_out))
    z = rng.integers(1, 16, (n_in // GROUP, n_out))
    s = rng.uniform(0.002, 0.01, (n_in // GROUP, n_out)).astype(np.float16)
    out |= {f"{base}.qweight": _pack(q, 0), f"{base}.qzeros": _pack(z - 1, 1), f"{base}.scales": s,
            f"{base}.g_idx": (np.arange(n_in) // GROUP).astype(np.int32)}
    dense[f"{base}.weight"] = ((q - np.repeat(z, GROUP, 0)) * np.repeat(s.astype(np.float32), GROUP, 0)).T


def _awq(base, w, rng, out, dense):
    n_out, n_in = w.shape
    q = rng.integers(0, 16, (n_in, n_out))
    z = rng.integers(0, 16, (n_in // GROUP, n_out))
    s = rng.uniform(0.002, 0.01, (n_in // GROUP, n_out)).astype(np.float16)
    out |= {f"{base}.qweight": _pack(q, 1, AWQ_ORDER), f"{base}.qzeros": _pack(z, 1, AWQ_ORDER), f"{base}.scales": s}
    dense[f"{base}.weight"] = ((q - np.repeat(z, GROUP, 0)) * np.repeat(s.astype(np.float32), GROUP, 0)).T


def _compressed_int4(base, w, rng, out, dense):
    torch = pytest.importorskip("torch")
    helpers = pytest.importorskip("compressed_tensors.compressors.pack_quantized.helpers")
    n_out, n_in = w.shape
    q = rng.integers(-8, 8, (n_out, n_in)).astype(np.int8)
    s = rng.uniform(0.002, 0.01, (n_out, n_in // GROUP)).astype(np.float16)
    packed = helpers.pack_to_int32(torch.from_numpy(q), 4).numpy()  # compressed-tensors' own packing
    out |= {f"{base}.weight_packed": packed, f"{base}.weight_scale": s,
            f"{base}.weight_shape": np.array([n_out, n_in], np.int64)}
    dense[f"{base}.weight"] = q * np.repeat(s.astype(np.float32), GROUP, 1)


def _fp8_blocks(base, w, rng, out, dense):
    torch = pytest.importorskip("torch")
    n_out, n_in = w.shape
    codes = torch.from_numpy(rng.normal(0, 100, (n_out, n_in)).astype(np.float32)).to(torch.float8_e4m3fn)
    inv = rng.uniform(1e-5, 1e-4, (-(-n_out // 128), -(-n_in // 128))).astype(np.float32)
    out |= {f"{base}.weight": codes, f"{base}.weight_scale_inv": inv}
    dense[f"{base}.weight"] = codes.float().numpy() * np.repeat(np.repeat(inv, 128, 0), 128, 1)[:n_out, :n_in]


METHODS = {  # method -> (writer of one linear layer, quantization_config, label)
    "gptq": (_gptq, {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "sym": False, "desc_act": False},
             "gptq-int4-g128"),
    "awq": (_awq, {"quant_method": "awq", "bits": 4, "group_size": GROUP, "version": "gemm", "zero_point": True},
            "awq-int4-g128"),
    "compressed-tensors": (_compressed_int4, {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                              "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
                                                  "num_bits": 4, "type": "int", "symmetric": True,
                                                  "strategy": "group", "group_size": GROUP}}},
                                              "ignore": ["lm_head"]}, "compressed-tensors-int4-g128"),
    "fp8": (_fp8_blocks, {"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8-block128x128"),
}


@pytest.fixture(scope="module")
def tiny_tensors(llama_tensors):
    """A random float Llama whose linear layers' input sizes are multiples of 128 (the groups and FP8 blocks)."""
    return llama_tensors(CONFIG, seed=7)


@pytest.mark.parametrize("method", list(METHODS))
def test_quantized_checkpoint_reads_as_its_float_weights(method, tiny_tensors, tmp_path):
    write_layer, qconfig, label = METHODS[method]
    rng = np.random.default_rng(0)
    stored, dense = {}, {}
    for base in _linears(tiny_tensors):
        write_layer(base, tiny_tensors[f"{base}.weight"], rng, stored, dense)
    rest = {k: v for k, v in tiny_tensors.items() if k not in dense}
    quantized = _write(tmp_path / "q", {**rest, **stored}, qconfig)
    floats = _write(tmp_path / "f", {**rest, **{k: v.astype(np.float32) for k, v in dense.items()}}, None)
    model = jaxeval.load_model(quantized, dtype="float32", load_tokenizer=False)
    reference = jaxeval.load_model(floats, dtype="float32", load_tokenizer=False)
    assert model.quantization == label
    wq = model.module.params()["layers"]["wq"]
    assert quant.is_quantized(wq) and not quant.is_quantized(model.module.params()["lm_head"])
    # every rebuilt weight equals the float folder's, layer by layer
    import jax

    for name, w in model.module.params()["layers"].items():
        if quant.is_quantized(w):
            rebuilt = np.asarray(jax.vmap(quant.dense_weight, in_axes=(0, None))(w, np.float32))
            np.testing.assert_allclose(rebuilt, np.asarray(reference.module.params()["layers"][name]),
                                       rtol=2 ** -23, atol=0, err_msg=name)
    ids = np.random.default_rng(1).integers(3, CONFIG["vocab_size"], 300)
    a, b = (m.read(ids, np.arange(1, 300), ids[1:]).logprobs for m in (model, reference))
    np.testing.assert_allclose(a, b, atol=1e-5)
    dense_model = jaxeval.load_model(quantized, dtype="float32", load_tokenizer=False, dequantize=True)
    assert dense_model.quantization == label + "-dequantized" and not quant.is_quantized(
        dense_model.module.params()["layers"]["wq"])
    np.testing.assert_allclose(dense_model.read(ids, np.arange(1, 300), ids[1:]).logprobs, b, atol=1e-5)
    assert quant.param_bytes(model.module.params()["layers"]) < 0.4 * quant.param_bytes(
        reference.module.params()["layers"])


def test_unsupported_quantization_configs_name_the_field(tmp_path, tiny_tensors):
    folder = _write(tmp_path / "bnb", tiny_tensors, {"quant_method": "bitsandbytes"})
    with pytest.raises(ConfigError, match=r"config.json: quantization_config.quant_method 'bitsandbytes' is not "
                                          r"supported \(supported: gptq, awq, compressed-tensors, fp8\)"):
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    folder = _write(tmp_path / "gemv", tiny_tensors, {"quant_method": "awq", "bits": 4, "version": "gemv"})
    with pytest.raises(ConfigError, match="only 4-bit GEMM checkpoints are supported"):
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
