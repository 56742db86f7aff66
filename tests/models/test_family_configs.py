"""config.json reading for the Phi-3, OLMo 2/3, SmolLM3, GLM, Granite, Mistral-Nemo and Ministral families.

Each config has the layout and the fields that matter of the family's published config.json (transformers
v4 files; long rope factor lists replaced by synthetic values of the right length). transformers v5 reads
each one and writes it back in its own layout; jaxeval must derive the same ModelConfig from both, and
the values each family's transformers classes use. No torch needed.
"""

from __future__ import annotations

import json
import math
import re

import pytest

transformers = pytest.importorskip("transformers")

from jaxeval.errors import ConfigError  # noqa: E402
from jaxeval.models.config import FULL, SLIDING, RopeConfig, config_from_hf, load_hf_config  # noqa: E402


def _factors(n: int, step: float) -> list[float]:
    return [round(1.0 + step * i, 6) for i in range(n)]


PHI_3_5_MINI = {
    "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 1,
    "embd_pdrop": 0.0, "eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "phi3", "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096,
    "pad_token_id": 32000, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": _factors(48, 1.3), "short_factor": _factors(48, 0.01), "type": "longrope"},
    "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.3", "use_cache": True, "vocab_size": 32064}

# The first Phi-3 128k files called longrope "su" (transformers 4.x read it as longrope; 5.24 renames it only
# after its own checks, and fails on it): read as longrope, not in HUB_CONFIGS.
PHI_3_MINI_128K_SU = {**PHI_3_5_MINI, "rope_scaling": {**PHI_3_5_MINI["rope_scaling"], "type": "su"},
                      "transformers_version": "4.40.0.dev0"}

PHI_3_MINI_4K = {**PHI_3_5_MINI, "max_position_embeddings": 4096, "rope_scaling": None, "sliding_window": 2047}

PHI_4_MINI = {
    "architectures": ["Phi3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 199999,
    "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu", "hidden_size": 3072,
    "initializer_range": 0.02, "intermediate_size": 8192, "interpolate_factor": 1, "lm_head_bias": False,
    "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "phi3", "num_attention_heads": 24,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "original_max_position_embeddings": 4096,
    "pad_token_id": 199999, "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": _factors(48, 1.1), "short_factor": _factors(48, 0.02), "type": "longrope"},
    "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0", "use_cache": True, "vocab_size": 200064}

OLMO_2_7B = {
    "architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "max_position_embeddings": 4096, "model_type": "olmo2", "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 32, "pad_token_id": 100277, "rms_norm_eps": 1e-06, "rope_scaling": None,
    "rope_theta": 500000, "tie_word_embeddings": False, "torch_dtype": "float32",
    "transformers_version": "4.47.0.dev0", "use_cache": True, "vocab_size": 100352}

OLMO_3_7B = {
    "architectures": ["Olmo3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "eos_token_id": 100257,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
    "layer_types": [SLIDING if (i + 1) % 4 else FULL for i in range(32)], "max_position_embeddings": 65536,
    "model_type": "olmo3", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "pad_token_id": 100277, "rms_norm_eps": 1e-06,
    "rope_scaling": {"attention_factor": 1.2079441541679836, "beta_fast": 32, "beta_slow": 1, "factor": 8.0,
                     "original_max_position_embeddings": 8192, "rope_type": "yarn"},
    "rope_theta": 500000, "sliding_window": 4096, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.57.0", "use_cache": True, "vocab_size": 100278}

SMOLLM3_3B = {
    "architectures": ["SmolLM3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": None,
    "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 11008, "max_position_embeddings": 65536, "max_window_layers": 28, "mlp_bias": False,
    "model_type": "smollm3", "no_rope_layer_interval": 4, "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)],
    "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 4, "pad_token_id": 128004,
    "pretraining_tp": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 5000000.0,
    "sliding_window": None, "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0", "use_cache": False,
    "use_sliding_window": False, "vocab_size": 128256}

GLM_4_9B_0414 = {
    "architectures": ["Glm4ForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
    "eos_token_id": [151329, 151336, 151338], "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
    "initializer_range": 0.02, "intermediate_size": 13696, "max_position_embeddings": 32768, "model_type": "glm4",
    "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 2, "pad_token_id": 151329,
    "partial_rotary_factor": 0.5, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.52.0.dev0", "use_cache": True, "vocab_size": 151552}

GLM_4_9B_CHAT_1M = {  # model_type glm: GLM-4-0414's attention with Llama's norm placement
    **{k: v for k, v in GLM_4_9B_0414.items() if k != "partial_rotary_factor"},
    "architectures": ["GlmForCausalLM"], "model_type": "glm", "max_position_embeddings": 1048576,
    "rope_theta": 100000000.0, "rms_norm_eps": 1.5625e-07}

GRANITE_3_3_8B = {
    "architectures": ["GraniteForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "attention_multiplier": 0.0078125, "bos_token_id": 0, "embedding_multiplier": 12.0, "eos_token_id": 0,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 12800,
    "logits_scaling": 16.0, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "granite",
    "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "pad_token_id": 0,
    "residual_multiplier": 0.22, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000000.0,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.49.0", "use_cache": True,
    "vocab_size": 49159}

MISTRAL_NEMO = {
    "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 1024000, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0, "sliding_window": None, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": True, "vocab_size": 131072}

MINISTRAL_8B = {
    "architectures": ["MinistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 12288, "layer_types": [SLIDING if i % 4 else FULL for i in range(36)],
    "max_position_embeddings": 32768, "model_type": "ministral", "num_attention_heads": 32, "num_hidden_layers": 36,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 100000000.0, "sliding_window": 32768,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.57.0", "use_cache": True,
    "vocab_size": 131072}

EXAONE_4_32B = {
    "architectures": ["Exaone4ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 361,
    "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02,
    "intermediate_size": 27392, "layer_types": [SLIDING if (i + 1) % 4 else FULL for i in range(64)],
    "max_position_embeddings": 131072, "model_type": "exaone4", "num_attention_heads": 40, "num_hidden_layers": 64,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 1000000, "sliding_window": 4096, "sliding_window_pattern": "LLLG", "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0", "use_cache": True, "vocab_size": 102400}

EXAONE_4_1_2B = {  # no sliding window: global attention with rope on every layer
    **EXAONE_4_32B, "hidden_size": 2048, "intermediate_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 30,
    "layer_types": [FULL] * 30, "sliding_window": None, "sliding_window_pattern": None, "tie_word_embeddings": True,
    "max_position_embeddings": 65536}

SEED_OSS_36B = {
    "architectures": ["SeedOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.1,
    "attention_out_bias": False, "bos_token_id": 0, "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 27648, "max_position_embeddings": 524288,
    "mlp_bias": False, "model_type": "seed_oss", "num_attention_heads": 80, "num_hidden_layers": 64,
    "num_key_value_heads": 8, "pad_token_id": 1, "residual_dropout": 0.1, "rms_norm_eps": 1e-06,
    "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "transformers_version": "4.55.0.dev0", "use_cache": True, "vocab_size": 155136}

MINISTRAL_3_8B = {  # multimodal: the text tower is model_type ministral3 (vision tower left to its defaults here)
    "architectures": ["Mistral3ForConditionalGeneration"], "image_token_index": 10, "model_type": "mistral3",
    "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
    "text_config": {
        "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 14336, "max_position_embeddings": 262144, "model_type": "ministral3",
        "num_attention_heads": 32, "num_hidden_layers": 34, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
        "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 16.0, "llama_4_scaling_beta": 0.1,
                            "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 16384,
                            "rope_theta": 1000000.0, "rope_type": "yarn", "type": "yarn"},
        "sliding_window": None, "use_cache": True, "vocab_size": 131072},
    "torch_dtype": "bfloat16", "transformers_version": "5.0.0.dev0", "vision_feature_layer": -1}

MISTRAL_SMALL_3_1 = {  # multimodal with a Mistral text tower
    "architectures": ["Mistral3ForConditionalGeneration"], "image_token_index": 10, "model_type": "mistral3",
    "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
    "text_config": {"head_dim": 128, "hidden_size": 5120, "intermediate_size": 32768,
                    "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
                    "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                    "rope_theta": 1000000000.0, "sliding_window": None, "vocab_size": 131072},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0", "vision_feature_layer": -1}

HUB_CONFIGS = {"phi-3.5-mini": PHI_3_5_MINI, "phi-3-mini-4k": PHI_3_MINI_4K,
               "phi-4-mini": PHI_4_MINI, "olmo-2-7b": OLMO_2_7B, "olmo-3-7b": OLMO_3_7B, "smollm3-3b": SMOLLM3_3B,
               "glm-4-9b-0414": GLM_4_9B_0414, "glm-4-9b-chat-1m": GLM_4_9B_CHAT_1M,
               "granite-3.3-8b": GRANITE_3_3_8B, "mistral-nemo": MISTRAL_NEMO, "ministral-8b": MINISTRAL_8B,
               "exaone-4.0-32b": EXAONE_4_32B, "exaone-4.0-1.2b": EXAONE_4_1_2B, "seed-oss-36b": SEED_OSS_36B,
               "ministral-3-8b": MINISTRAL_3_8B, "mistral-small-3.1": MISTRAL_SMALL_3_1}


def transformers_rewrite(raw: dict, folder) -> dict:
    """config.json as transformers v5 reads and writes it back (v5 layout, defaults filled in)."""
    (folder / "config.json").write_text(json.dumps(raw))
    return transformers.AutoConfig.from_pretrained(folder).to_dict()


@pytest.mark.parametrize("name", list(HUB_CONFIGS))
def test_hub_config_matches_transformers_reading(name, tmp_path):
    v5 = transformers_rewrite(HUB_CONFIGS[name], tmp_path)
    ours = load_hf_config(tmp_path)
    assert config_from_hf(v5) == ours
    if "layer_types" in v5:
        assert list(ours.layer_types) == v5["layer_types"]
    if "no_rope_layers" in v5:
        assert ours.no_rope_layers == tuple(i for i, uses in enumerate(v5["no_rope_layers"]) if not uses)


def test_phi3_values():
    phi35 = config_from_hf(PHI_3_5_MINI)
    assert phi35.rope.kind == "longrope" and phi35.rope.original_max_position == 4096 and phi35.rope.factor == 32
    assert phi35.rope.attention_factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    assert phi35.rotary_dim == phi35.head_dim == 96 and phi35.sliding_window == 262144
    assert phi35.layer_types == (SLIDING,) * 32  # one sliding mask for every layer, as transformers' Phi-3
    assert config_from_hf(PHI_3_MINI_128K_SU) == phi35  # "su" is longrope
    assert config_from_hf(PHI_3_MINI_4K).sliding_window == 2047

    phi4 = config_from_hf(PHI_4_MINI)
    assert (phi4.head_dim, phi4.rotary_dim, phi4.num_kv_heads) == (128, 96, 8) and phi4.tie_word_embeddings
    # Phi3Config always has original_max_position_embeddings (4096 by default) and prefers it to the rope dict's
    bare = {k: v for k, v in PHI_4_MINI.items() if k != "original_max_position_embeddings"}
    bare["rope_scaling"] = {**bare["rope_scaling"], "original_max_position_embeddings": 8192}
    assert config_from_hf(bare).rope.original_max_position == 4096


def test_olmo_values():
    olmo2 = config_from_hf(OLMO_2_7B)
    assert olmo2.qk_norm and olmo2.qk_norm_over_heads and not olmo2.pre_norm and olmo2.sandwich_norm
    assert olmo2.norm_scale_float32 and olmo2.layer_types == (FULL,) * 32 and olmo2.rope == RopeConfig(theta=5e5)

    olmo3 = config_from_hf(OLMO_3_7B)
    assert olmo3.layer_types[:4] == (SLIDING, SLIDING, SLIDING, FULL) and olmo3.sliding_window == 4096
    assert olmo3.rope.kind == "yarn" and olmo3.rope.factor == 8.0 and olmo3.rope.original_max_position == 8192
    assert olmo3.rope_local == RopeConfig(theta=500000.0)  # YaRN on the full-attention layers only
    # without layer_types: 3 sliding layers, then a full one (Olmo3Config's default)
    bare = {k: v for k, v in OLMO_3_7B.items() if k != "layer_types"}
    assert config_from_hf(bare).layer_types == olmo3.layer_types


def test_olmo3_v4_rope_theta_reaches_the_full_layers_only(tmp_path):
    """Olmo3Config reads a v4 file's rope_theta once, for the full-attention layers; its sliding layers keep the
    class default 5e5 (transformers' own reading, checked here, is the reference)."""
    raw = {**OLMO_3_7B, "rope_theta": 10000.0}
    v5 = transformers_rewrite(raw, tmp_path)
    assert v5["rope_parameters"][SLIDING]["rope_theta"] == 500000.0
    assert v5["rope_parameters"][FULL]["rope_theta"] == 10000.0
    ours = config_from_hf(raw)
    assert (ours.rope.theta, ours.rope_local.theta) == (10000.0, 500000.0) and ours == config_from_hf(v5)


def test_smollm3_values():
    smol = config_from_hf(SMOLLM3_3B)
    assert smol.no_rope_layers == tuple(range(3, 36, 4)) and smol.tie_word_embeddings
    assert smol.layer_types == (FULL,) * 36 and smol.rope == RopeConfig(theta=5e6)
    # no no_rope_layers: every no_rope_layer_interval-th layer is NoPE; a longer list is cut to the layers
    bare = {k: v for k, v in SMOLLM3_3B.items() if k != "no_rope_layers"}
    assert config_from_hf({**bare, "no_rope_layer_interval": 3}).no_rope_layers == tuple(range(2, 36, 3))
    assert config_from_hf({**SMOLLM3_3B, "no_rope_layers": [1, 0] * 20}).no_rope_layers == tuple(range(1, 36, 2))
    # use_sliding_window slides the NoPE layers only (SmolLM3Config's default layer_types)
    sliding = config_from_hf({**SMOLLM3_3B, "use_sliding_window": True, "sliding_window": 4096})
    assert [i for i, t in enumerate(sliding.layer_types) if t == SLIDING] == list(sliding.no_rope_layers)


def test_glm_values():
    glm4 = config_from_hf(GLM_4_9B_0414)
    assert (glm4.head_dim, glm4.rotary_dim) == (128, 64) and glm4.rope_interleaved and glm4.qkv_bias
    assert glm4.sandwich_norm and glm4.pre_norm and not glm4.norm_plus_one
    glm = config_from_hf(GLM_4_9B_CHAT_1M)
    assert glm.rotary_dim == 64 and glm.rope_interleaved and glm.qkv_bias and not glm.sandwich_norm
    # GlmConfig / Glm4Config defaults: head_dim 128, partial_rotary_factor 0.5, attention_bias true
    bare = {k: v for k, v in GLM_4_9B_0414.items() if k not in ("head_dim", "partial_rotary_factor", "attention_bias")}
    assert config_from_hf(bare) == glm4
    assert not config_from_hf({**GLM_4_9B_0414, "attention_bias": False}).qkv_bias


def test_partial_rotary_factor_in_the_rope_dict_wins_like_transformers(tmp_path):
    raw = {**GLM_4_9B_0414, "partial_rotary_factor": 0.25,
           "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75}}
    raw.pop("rope_theta")
    v5 = transformers_rewrite(raw, tmp_path)
    assert v5["rope_parameters"]["partial_rotary_factor"] == 0.75
    assert config_from_hf(raw).rotary_dim == 96 == config_from_hf(v5).rotary_dim


def test_granite_values():
    g = config_from_hf(GRANITE_3_3_8B)
    assert (g.embed_scale, g.query_scale, g.residual_scale, g.logits_scaling) == (12.0, 0.0078125, 0.22, 16.0)
    assert g.attention_scale == 0.0078125 and g.tie_word_embeddings and g.layer_types == (FULL,) * 40
    # GraniteConfig's multipliers default to 1.0, attention's too (not head_dim ** -0.5)
    bare = {k: v for k, v in GRANITE_3_3_8B.items()
            if k not in ("attention_multiplier", "embedding_multiplier", "residual_multiplier", "logits_scaling")}
    assert config_from_hf(bare).attention_scale == 1.0 and config_from_hf(bare).residual_scale == 1.0


def test_mistral_nemo_and_ministral_values():
    nemo = config_from_hf(MISTRAL_NEMO)
    assert nemo.head_dim == 128 != nemo.hidden_size // nemo.num_heads and nemo.attention_scale == 128 ** -0.5
    assert nemo.layer_types == (FULL,) * 40 and nemo.rope == RopeConfig(theta=1e6)
    ministral = config_from_hf(MINISTRAL_8B)
    assert ministral.layer_types == tuple(MINISTRAL_8B["layer_types"]) and ministral.sliding_window == 32768
    # MinistralConfig without layer_types: every layer slides when sliding_window is set, none when it is null
    bare = {k: v for k, v in MINISTRAL_8B.items() if k != "layer_types"}
    assert config_from_hf(bare).layer_types == (SLIDING,) * 36
    assert config_from_hf({**bare, "sliding_window": None}).layer_types == (FULL,) * 36


def test_exaone4_and_seed_oss_values():
    big = config_from_hf(EXAONE_4_32B)
    assert big.layer_types[:4] == (SLIDING, SLIDING, SLIDING, FULL) and big.sliding_window == 4096
    assert big.no_rope_layers == tuple(range(3, 64, 4))  # global layers without rope
    assert not big.pre_norm and big.sandwich_norm and big.qk_norm and not big.qk_norm_over_heads
    assert not big.norm_scale_float32 and big.rope.kind == "llama3"
    small = config_from_hf(EXAONE_4_1_2B)
    assert small.layer_types == (FULL,) * 30 and small.no_rope_layers == () and small.tie_word_embeddings
    # without layer_types: Exaone4Config's integer pattern (a string one needs layer_types, as in transformers)
    bare = {k: v for k, v in EXAONE_4_32B.items() if k != "layer_types"}
    assert config_from_hf({**bare, "sliding_window_pattern": 4}) == big
    with pytest.raises(ConfigError, match="'sliding_window_pattern'='LLLG' needs an explicit 'layer_types'"):
        config_from_hf(bare)

    seed = config_from_hf(SEED_OSS_36B)
    assert seed.qkv_bias and seed.head_dim == 128 != seed.hidden_size // seed.num_heads
    assert seed.rope == RopeConfig(theta=1e7) and seed.layer_types == (FULL,) * 64


def test_mistral3_text_towers():
    m3 = config_from_hf(MINISTRAL_3_8B)
    assert m3.model_type == "ministral3" and (m3.num_layers, m3.head_dim, m3.max_position_embeddings) == (34, 128, 262144)
    assert (m3.query_scale_beta, m3.query_scale_span) == (0.1, 16384)
    assert m3.rope.kind == "yarn" and m3.rope.factor == 16.0 and m3.rope.attention_factor == 1.0  # mscale / mscale_all
    assert m3.layer_types == (FULL,) * 34
    # Ministral3Config without any rope entry: its default YaRN (factor 16 over 16k, beta 0.1)
    text = {k: v for k, v in MINISTRAL_3_8B["text_config"].items() if k != "rope_parameters"}
    assert config_from_hf({**MINISTRAL_3_8B, "text_config": text}) == m3
    small = config_from_hf(MISTRAL_SMALL_3_1)
    assert small.model_type == "mistral" and small.query_scale_beta == 0.0 and small.rope == RopeConfig(theta=1e9)
    # Mistral3Config without a text_config: Mistral Small 3.1's text tower
    assert config_from_hf({k: v for k, v in MISTRAL_SMALL_3_1.items() if k != "text_config"}) == small
    with pytest.raises(ConfigError, match="'llama_4_scaling_beta'"):
        rope = {k: v for k, v in text.items()} | {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6,
                                                                       "factor": 4.0}}
        config_from_hf({**MINISTRAL_3_8B, "text_config": rope})


@pytest.mark.parametrize("name", ["olmo-2-7b", "glm-4-9b-0414", "glm-4-9b-chat-1m", "granite-3.3-8b", "seed-oss-36b"])
def test_causal_only_families_ignore_windows(name):
    """These families' transformers models build one causal mask whatever sliding_window or layer_types say."""
    raw = HUB_CONFIGS[name]
    n = raw["num_hidden_layers"]
    ours = config_from_hf({**raw, "sliding_window": 512, "layer_types": [SLIDING] * n})
    assert ours.layer_types == (FULL,) * n and ours.sliding_window is None


@pytest.mark.parametrize("raw,field", [
    ({**SEED_OSS_36B, "attention_out_bias": True}, "'attention_out_bias'=True"),
    ({**OLMO_2_7B, "attention_bias": True}, "'attention_bias'=True"),
    ({**SMOLLM3_3B, "attention_bias": True}, "'attention_bias'=True"),
    ({**GRANITE_3_3_8B, "attention_bias": True}, "'attention_bias'=True"),
    ({**GRANITE_3_3_8B, "mlp_bias": True}, "'mlp_bias'=True"),
    ({**GLM_4_9B_0414, "attention_bias": "yes"}, "'attention_bias'='yes'"),
    ({**SMOLLM3_3B, "no_rope_layers": [1, 1, 1]}, "'no_rope_layers'"),
    ({**SMOLLM3_3B, "no_rope_layers": [2] * 36}, "'no_rope_layers'"),
    ({**GRANITE_3_3_8B, "logits_scaling": 0}, "'logits_scaling'"),
    ({**GRANITE_3_3_8B, "residual_multiplier": "0.22"}, "'residual_multiplier'='0.22'"),
    ({**OLMO_2_7B, "partial_rotary_factor": 0.5}, "'partial_rotary_factor'=0.5"),
])
def test_unsupported_fields_are_refused_by_name(raw, field):
    with pytest.raises(ConfigError, match="config.json: .*" + re.escape(field)):
        config_from_hf(raw)
