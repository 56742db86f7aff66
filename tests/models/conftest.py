"""Fixtures shared by the model tests: tiny Hugging Face style model folders written with numpy only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

TINY_LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "attention_bias": False,
    "mlp_bias": False,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def hf_llama_tensors(config: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 tensors named and shaped as transformers' LlamaForCausalLM saves them."""
    rng = np.random.default_rng(seed)
    v, d, f = config["vocab_size"], config["hidden_size"], config["intermediate_size"]
    h, kv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    tensors = {"model.embed_tokens.weight": w(v, d), "model.norm.weight": 1 + 0.3 * w(d)}
    if not config.get("tie_word_embeddings"):
        tensors["lm_head.weight"] = w(v, d)
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors |= {p + "self_attn.q_proj.weight": w(h * hd, d), p + "self_attn.k_proj.weight": w(kv * hd, d),
                    p + "self_attn.v_proj.weight": w(kv * hd, d), p + "self_attn.o_proj.weight": w(d, h * hd),
                    p + "mlp.gate_proj.weight": w(f, d), p + "mlp.up_proj.weight": w(f, d),
                    p + "mlp.down_proj.weight": w(d, f), p + "input_layernorm.weight": 1 + 0.3 * w(d),
                    p + "post_attention_layernorm.weight": 1 + 0.3 * w(d)}
    return tensors


def write_hf_folder(folder: Path, config: dict, tensors: dict[str, np.ndarray]) -> Path:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="session")
def llama_tensors():
    """hf_llama_tensors(config, seed=0): random tensors of a Llama config, for tests that write their own folders."""
    return hf_llama_tensors


@pytest.fixture(scope="session")
def tiny_llama_writer():
    """write(folder, config_overrides=None) -> folder: a tiny random Llama in HF layout (for module fixtures)."""

    def write(folder, config_overrides=None):
        config = {**TINY_LLAMA_CONFIG, **(config_overrides or {})}
        return write_hf_folder(Path(folder), config, hf_llama_tensors(config))

    return write


@pytest.fixture
def tiny_llama_folder(tmp_path):
    """Factory: tiny_llama_folder(name="m", config_overrides=None, tensors_edit=None) -> folder path.

    tensors_edit(tensors) may change the tensor dict in place before it is written.
    """

    def make(name="tiny_llama", config_overrides=None, tensors_edit=None):
        config = {**TINY_LLAMA_CONFIG, **(config_overrides or {})}
        tensors = hf_llama_tensors(config)
        if tensors_edit is not None:
            tensors_edit(tensors)
        return write_hf_folder(tmp_path / name, config, tensors)

    return make
