"""config.json translation for the hub's real config layouts (transformers v4 files, as published).

Each config below has the fields of the hub's config.json for that model. transformers (v5) reads
it and writes it back in its own layout (rope_parameters, layer_types, every default filled in);
jaxeval must derive the same ModelConfig from both files. No torch needed.
"""

from __future__ import annotations

import json

import pytest

transformers = pytest.importorskip("transformers")

from jaxeval.models.config import FULL, SLIDING, RopeConfig, config_from_hf, load_hf_config  # noqa: E402

LLAMA_3_1_8B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": True, "vocab_size": 128256}

LLAMA_2_7B = {  # no rope_theta at all: the default 10000 applies
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "tie_word_embeddings": False,
    "torch_dtype": "float16", "transformers_version": "4.31.0.dev0", "use_cache": True, "vocab_size": 32000}

MISTRAL_7B_V01 = {
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": True, "vocab_size": 32000}

MISTRAL_7B_V03 = {**MISTRAL_7B_V01, "rope_theta": 1000000.0, "sliding_window": None, "vocab_size": 32768,
                  "head_dim": None}

QWEN2_5_7B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False, "vocab_size": 152064}

QWEN3_0_6B = {
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024,
    "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960,
    "max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
    "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.51.0", "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}

GEMMA_2_2B = {
    "architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 107],
    "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 2304, "initializer_range": 0.02,
    "intermediate_size": 9216, "max_position_embeddings": 8192, "model_type": "gemma2", "num_attention_heads": 8,
    "num_hidden_layers": 26, "num_key_value_heads": 4, "pad_token_id": 0, "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096, "torch_dtype": "float32",
    "transformers_version": "4.42.4", "use_cache": True, "vocab_size": 256000}

GEMMA_3_1B = {
    "architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
    "final_logit_softcapping": None, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
    "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
    "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
    "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
    "rope_scaling": None, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "use_cache": True, "vocab_size": 262144}

GEMMA_3_4B = {  # multimodal: the text tower's config lists only what differs from the class defaults
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": False}}

HUB_CONFIGS = {"llama-3.1-8b": LLAMA_3_1_8B, "llama-2-7b": LLAMA_2_7B, "mistral-7b-v0.1": MISTRAL_7B_V01,
               "mistral-7b-v0.3": MISTRAL_7B_V03, "qwen2.5-7b": QWEN2_5_7B, "qwen3-0.6b": QWEN3_0_6B,
               "gemma-2-2b": GEMMA_2_2B, "gemma-3-1b": GEMMA_3_1B, "gemma-3-4b": GEMMA_3_4B}


def transformers_rewrite(raw: dict, folder) -> dict:
    """config.json as transformers v5 reads and writes it back (v5 layout, defaults filled in)."""
    (folder / "config.json").write_text(json.dumps(raw))
    return transformers.AutoConfig.from_pretrained(folder).to_dict()


@pytest.mark.parametrize("name", list(HUB_CONFIGS))
def test_hub_config_matches_transformers_reading(name, tmp_path):
    raw = HUB_CONFIGS[name]
    v5 = transformers_rewrite(raw, tmp_path)  # also leaves the hub file in tmp_path
    ours = load_hf_config(tmp_path)
    assert "rope_parameters" in json.dumps(v5)
    assert config_from_hf(v5) == ours
    if "layer_types" in json.dumps(v5):  # transformers' own layer types and ours agree
        text = v5.get("text_config", v5)
        assert list(ours.layer_types) == text["layer_types"]


def test_hub_config_values():
    llama = config_from_hf(LLAMA_3_1_8B)
    assert llama.rope == RopeConfig(theta=500000.0, kind="llama3", factor=8.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0, original_max_position=8192)
    assert llama.head_dim == 128 and llama.eos_token_ids == (128001, 128008, 128009)
    assert llama.layer_types == (FULL,) * 32 and llama.sliding_window is None and not llama.qkv_bias

    assert config_from_hf(LLAMA_2_7B).rope == RopeConfig(theta=10000.0)

    m1, m3 = config_from_hf(MISTRAL_7B_V01), config_from_hf(MISTRAL_7B_V03)
    assert m1.layer_types == (SLIDING,) * 32 and m1.sliding_window == 4096
    assert m3.layer_types == (FULL,) * 32 and m3.sliding_window is None and m3.head_dim == 128

    qwen2 = config_from_hf(QWEN2_5_7B)
    assert qwen2.qkv_bias and qwen2.layer_types == (FULL,) * 28 and qwen2.sliding_window is None
    assert qwen2.rope == RopeConfig(theta=1e6) and not qwen2.tie_word_embeddings

    qwen3 = config_from_hf(QWEN3_0_6B)
    assert qwen3.qk_norm and qwen3.head_dim == 128 != qwen3.hidden_size // qwen3.num_heads
    assert qwen3.tie_word_embeddings and not qwen3.qkv_bias

    g2 = config_from_hf(GEMMA_2_2B)
    assert g2.layer_types[:2] == (SLIDING, FULL) and g2.sliding_window == 4096
    assert (g2.attn_logit_softcap, g2.final_logit_softcap) == (50.0, 30.0)
    assert g2.attention_scale == 256 ** -0.5 and g2.embed_scale == 2304 ** 0.5
    assert g2.norm_plus_one and g2.sandwich_norm and g2.tie_word_embeddings and g2.hidden_act == "gelu_tanh"

    g3 = config_from_hf(GEMMA_3_1B)
    assert g3.layer_types[:6] == (SLIDING,) * 5 + (FULL,) and g3.sliding_window == 512
    assert g3.rope == RopeConfig(theta=1e6) and g3.rope_local == RopeConfig(theta=10000.0)
    assert g3.attn_logit_softcap is None and g3.final_logit_softcap is None and g3.qk_norm

    g3mm = config_from_hf(GEMMA_3_4B)
    assert g3mm.model_type == "gemma3_text" and g3mm.num_layers == 34 and g3mm.hidden_size == 2560
    assert (g3mm.num_heads, g3mm.num_kv_heads, g3mm.head_dim, g3mm.vocab_size) == (8, 4, 256, 262208)
    assert g3mm.rope == RopeConfig(theta=1e6, kind="linear", factor=8.0)
    assert g3mm.rope_local == RopeConfig(theta=10000.0)
    assert g3mm.sliding_window == 1024 and g3mm.eos_token_ids == (1, 106)


def test_gemma3_v4_and_v5_rope_layouts_agree():
    """rope_theta / rope_local_base_freq / rope_scaling (v4) == per-layer-type rope_parameters (v5)."""
    v4 = {**GEMMA_3_1B, "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "rope_theta": 500000.0,
          "rope_local_base_freq": 20000.0}
    v5 = {k: v for k, v in v4.items() if k not in ("rope_scaling", "rope_theta", "rope_local_base_freq")}
    v5["rope_parameters"] = {FULL: {"rope_type": "linear", "factor": 8.0, "rope_theta": 500000.0},
                             SLIDING: {"rope_type": "default", "rope_theta": 20000.0}}
    assert config_from_hf(v4) == config_from_hf(v5)
    assert config_from_hf(v4).rope_local == RopeConfig(theta=20000.0)
    # a missing rope_theta takes transformers' Gemma 3 defaults (1e6 global, 1e4 local)
    bare = {k: v for k, v in GEMMA_3_1B.items() if k not in ("rope_theta", "rope_local_base_freq")}
    assert (config_from_hf(bare).rope.theta, config_from_hf(bare).rope_local.theta) == (1e6, 1e4)


def test_mistral_ignores_layer_types_like_transformers():
    """transformers' Mistral applies sliding_window to every layer whatever layer_types says."""
    raw = {**MISTRAL_7B_V01, "num_hidden_layers": 2, "layer_types": [FULL, SLIDING]}
    assert config_from_hf(raw).layer_types == (SLIDING, SLIDING)
