"""What each model_type's transformers classes do beyond the common (Llama) reading in config.py.

Read from transformers 5.24's configuration_*.py and modeling_*.py of each family: the class defaults a
hub config.json may leave out, the layer types and sliding windows the masks use, and the static flags
of the one decoder (jaxeval.models.decoder) that reproduce each family's layer. A family's behaviour is
a flag here, never a branch on the model type in the decoder.
"""

from __future__ import annotations

from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models import deepseek_config, hybrid_config, moe_config

FULL, SLIDING, LINEAR = "full_attention", "sliding_attention", "linear_attention"  # LINEAR: Gated DeltaNet

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "ministral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3",
                         "olmo2", "olmo3", "smollm3", "glm", "glm4", "granite", "exaone4", "seed_oss", "ministral3",
                         "qwen3_5_text", "qwen3_moe", "mixtral", "gpt_oss", "deepseek_v3", "qwen3_5_moe_text")
# families whose attention rotates only part of each head
PARTIAL_ROTARY_TYPES = ("phi3", "glm", "glm4", "qwen3_5_text", "qwen3_5_moe_text")
PER_LAYER_TYPE_ROPE = ("gemma3_text", "olmo3")  # v5 rope_parameters keyed by layer type

# transformers' Gemma3TextConfig defaults. The hub's multimodal Gemma 3 config.json files (model_type
# "gemma3": 4B, 12B, 27B) list only the text_config fields that differ from these.
GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
    "rms_norm_eps": 1e-6, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True, "bos_token_id": 2, "eos_token_id": 1,
}
# Mistral3Config's text tower when config.json has none (Mistral Small 3.1); text_config's model_type defaults
# to mistral (Mistral Small 3.x) and is ministral3 in Ministral 3.
MISTRAL3_TEXT_DEFAULTS = {
    "attention_dropout": 0.0, "head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 32768,
    "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40,
    "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000000.0, "sliding_window": None,
    "vocab_size": 131072,
}
# Ministral3Config's rope when config.json gives neither rope_parameters nor rope_scaling.
MINISTRAL3_ROPE = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 16384,
                   "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}

# GptOssConfig's rope when config.json gives neither rope_parameters nor rope_scaling (theta: its default_theta).
GPT_OSS_ROPE = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096}

# Class defaults that differ from the common reading, applied to fields config.json leaves out. Phi3Config
# always has a top-level original_max_position_embeddings, which transformers prefers to rope_parameters'.
CLASS_DEFAULTS: dict[str, dict[str, Any]] = {
    "phi3": {"original_max_position_embeddings": 4096},
    "glm": {"head_dim": 128, "attention_bias": True, "partial_rotary_factor": 0.5},
    "glm4": {"head_dim": 128, "attention_bias": True, "partial_rotary_factor": 0.5},
    "smollm3": {"rope_theta": 2_000_000.0, "tie_word_embeddings": True},
    "olmo3": {"rope_theta": 500_000.0, "sliding_window": 4096},
    "ministral": {"sliding_window": 4096},
    "exaone4": {"sliding_window": 4096, "sliding_window_pattern": 4},
    "seed_oss": {"head_dim": 128, "attention_bias": True},
    "ministral3": {"head_dim": 128},
    "mixtral": {"rope_theta": 1_000_000.0},
    "gpt_oss": {"head_dim": 64, "sliding_window": 128, "attention_bias": True, "rope_theta": 150_000.0},
    "qwen3_5_text": {"head_dim": 256, "partial_rotary_factor": 0.25, "linear_conv_kernel_dim": 4,
                     "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                     "linear_num_value_heads": 32},
    # Qwen3_5MoeTextConfig: the same hybrid, every MLP the routed experts plus the gated shared expert
    "qwen3_5_moe_text": {"head_dim": 256, "partial_rotary_factor": 0.25, "linear_conv_kernel_dim": 4,
                         "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16,
                         "linear_num_value_heads": 32, "num_experts": 256, "num_experts_per_tok": 8,
                         "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512},
}

# attention_bias: qwen2 always has q/k/v biases; GLM's and Seed-OSS's q/k/v follow attention_bias (o has none;
# Seed-OSS's has attention_out_bias); Mistral, Ministral, Phi-3 and EXAONE 4 build their projections without
# biases whatever the field says; gpt-oss's q/k/v and o_proj all follow it. Elsewhere the field adds an o_proj
# bias too, which jaxeval refuses.
QKV_BIAS_ALWAYS, QKV_BIAS_FROM_FIELD = ("qwen2",), ("glm", "glm4", "seed_oss")
QKV_O_BIAS_FROM_FIELD = ("gpt_oss",)  # q/k/v and o_proj biases, all following attention_bias
BIAS_FIELD_IGNORED = ("mistral", "ministral", "ministral3", "phi3", "exaone4", "mixtral")

# SmolLM3-3B's config.json says pretraining_tp=2; transformers' SmolLM3 never reads the field.
IGNORES_PRETRAINING_TP = ("smollm3",)

# Families whose masks are causal only, whatever sliding_window or layer_types say.
ALWAYS_FULL = ("glm", "glm4", "granite", "olmo2", "seed_oss")
# Families that slide every layer when sliding_window is set (no layer_types in their config class).
SLIDE_EVERY_LAYER = ("mistral", "ministral3", "phi3", "mixtral")


def text_tower(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A multimodal config.json's text tower (Gemma 3, Mistral 3 / Ministral 3, Qwen3.5); any other config as it is.

    The top level's bos/eos token ids, where set, are the model's.
    """
    kind = raw.get("model_type")
    if kind in hybrid_config.COMPOSITE_TYPES:
        return hybrid_config.qwen3_5_text_tower(raw, where)
    if kind not in ("gemma3", "mistral3"):
        return raw
    text = raw.get("text_config", MISTRAL3_TEXT_DEFAULTS if kind == "mistral3" else None)
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: model_type={kind!r} but field 'text_config' is {text!r}")
    special = {k: raw[k] for k in ("bos_token_id", "eos_token_id") if raw.get(k) is not None}
    if kind == "gemma3":  # the hub's files list only the text fields that differ from the class defaults
        return {**GEMMA3_TEXT_DEFAULTS, **text, **special, "model_type": "gemma3_text"}
    # MistralConfig's and Ministral3Config's special tokens when the text tower lists none
    return {"bos_token_id": 1, "eos_token_id": 2, **text, **special, "model_type": text.get("model_type", "mistral")}


def with_class_defaults(raw: dict[str, Any], model_type: str) -> dict[str, Any]:
    """raw with the family's class defaults filled in for absent fields (an explicit null stays null)."""
    raw = {**CLASS_DEFAULTS.get(model_type, {}), **raw}
    if raw.get("rope_parameters") is None and raw.get("rope_scaling") is None:
        if model_type == "ministral3":
            raw["rope_parameters"] = dict(MINISTRAL3_ROPE)
        elif model_type == "gpt_oss":
            raw["rope_parameters"] = dict(GPT_OSS_ROPE)
    if model_type == "phi3":  # Phi3Config reads the rope types of older Phi-3 files as longrope
        for key in ("rope_scaling", "rope_parameters"):
            rope = raw.get(key)
            if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("su", "yarn"):
                raw[key] = {**{k: v for k, v in rope.items() if k != "type"}, "rope_type": "longrope"}
    return raw


def dense_mlp_field(model_type: str) -> str:
    """The config.json field of the width ModelConfig.intermediate_size holds: the dense MLP's, or in
    Qwen3.5-MoE (no dense MLP) the shared expert's."""
    return "shared_expert_intermediate_size" if model_type in moe_config.SHARED_EXPERT_TYPES else "intermediate_size"


def _positive_int(raw, key, default, where) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
    return value


def layer_types(raw, model_type, num_layers, where) -> tuple[str, ...]:
    """FULL or SLIDING per layer, as the family's masks choose them."""
    types = raw.get("layer_types")
    if model_type in SLIDE_EVERY_LAYER:  # one mask for every layer: sliding whenever sliding_window is set
        types = [SLIDING if raw.get("sliding_window") else FULL] * num_layers
    elif model_type in ALWAYS_FULL:
        types = [FULL] * num_layers
    if types is None:
        if model_type in hybrid_config.HYBRID_TYPES:
            types = hybrid_config.default_layer_types(raw, num_layers, where)
        elif model_type in ("gemma2", "gpt_oss"):
            types = [SLIDING if (i + 1) % 2 else FULL for i in range(num_layers)]
        elif model_type == "gemma3_text":
            pattern = _positive_int(raw, "sliding_window_pattern", 6, where)
            types = [SLIDING if (i + 1) % pattern else FULL for i in range(num_layers)]
        elif model_type == "olmo3":
            types = [SLIDING if (i + 1) % 4 else FULL for i in range(num_layers)]
        elif model_type == "ministral":
            types = [SLIDING if raw.get("sliding_window") is not None else FULL] * num_layers
        elif model_type == "exaone4":  # sliding but every sliding_window_pattern-th layer, none without a window
            types = [FULL] * num_layers
            if raw.get("sliding_window") is not None:
                if isinstance(raw.get("sliding_window_pattern"), str):  # Exaone4Config fails on these too
                    raise ConfigError(f"{where}: field 'sliding_window_pattern'={raw['sliding_window_pattern']!r} "
                                      "needs an explicit 'layer_types' (transformers reads only an integer pattern)")
                pattern = _positive_int(raw, "sliding_window_pattern", 4, where)
                types = [SLIDING if (i + 1) % pattern else FULL for i in range(num_layers)]
        elif model_type == "smollm3":  # sliding only on NoPE layers, and only with use_sliding_window
            nope = set(no_rope_layers(raw, model_type, num_layers, where))
            slide = raw.get("use_sliding_window") and raw.get("sliding_window") is not None
            types = [SLIDING if slide and i in nope else FULL for i in range(num_layers)]
        elif model_type == "qwen3_moe":  # one mask for every layer, sliding only with use_sliding_window
            types = [SLIDING if raw.get("use_sliding_window") and raw.get("sliding_window") else FULL] * num_layers
        elif model_type in ("qwen2", "qwen3") and raw.get("use_sliding_window"):
            start = int(raw.get("max_window_layers", num_layers))
            types = [SLIDING if i >= start else FULL for i in range(num_layers)]
        else:
            types = [FULL] * num_layers
    if not isinstance(types, (list, tuple)):
        raise ConfigError(f"{where}: field 'layer_types' must be a list, got {types!r}")
    kinds = (FULL, LINEAR) if model_type in hybrid_config.HYBRID_TYPES else (FULL, SLIDING)
    bad = [t for t in types if t not in kinds]
    if bad:
        raise ConfigError(f"{where}: field 'layer_types' has unsupported entry {bad[0]!r}")
    if len(types) != num_layers:
        raise ConfigError(f"{where}: field 'layer_types' has {len(types)} entries, num_hidden_layers={num_layers}")
    return tuple(types)


def no_rope_layers(raw, model_type, num_layers, where, types=()) -> tuple[int, ...]:
    """Indices of the layers without rotary embeddings (NoPE); types: the layer types, for EXAONE 4.

    SmolLM3's `no_rope_layers` holds one flag per layer, 1 where the layer *uses* rope (at least
    num_hidden_layers entries; the rest is unused); without it, every no_rope_layer_interval-th layer is NoPE.
    EXAONE 4 rotates only its sliding layers once sliding_window is set (global NoPE), every layer without it.
    """
    if model_type == "exaone4":
        return () if raw.get("sliding_window") is None else tuple(i for i, t in enumerate(types) if t == FULL)
    if model_type != "smollm3":
        return ()
    flags = raw.get("no_rope_layers")
    if flags is None:
        interval = _positive_int(raw, "no_rope_layer_interval", 4, where)
        flags = [int((i + 1) % interval != 0) for i in range(num_layers)]
    if not isinstance(flags, (list, tuple)) or len(flags) < num_layers or any(f not in (0, 1) for f in flags):
        raise ConfigError(f"{where}: field 'no_rope_layers' must list a 0 or 1 for each of the {num_layers} layers, "
                          f"got {flags!r}")
    return tuple(i for i in range(num_layers) if not flags[i])


def bias_fields(raw, model_type, where) -> dict[str, Any]:
    if raw.get("attention_out_bias") not in (None, False):
        raise ConfigError(f"{where}: field 'attention_out_bias'={raw.get('attention_out_bias')!r} is not supported "
                          "(an o_proj bias)")
    if model_type in QKV_BIAS_ALWAYS:
        return {"qkv_bias": True}
    if model_type in QKV_O_BIAS_FROM_FIELD:
        bias = raw.get("attention_bias")
        if not isinstance(bias, bool):
            raise ConfigError(f"{where}: field 'attention_bias'={bias!r} must be true or false")
        return {"qkv_bias": bias, "o_bias": bias}
    if model_type in QKV_BIAS_FROM_FIELD:
        bias = raw.get("attention_bias")
        if not isinstance(bias, bool):
            raise ConfigError(f"{where}: field 'attention_bias'={bias!r} must be true or false")
        return {"qkv_bias": bias}
    if model_type not in BIAS_FIELD_IGNORED and raw.get("attention_bias") not in (None, False):
        raise ConfigError(f"{where}: field 'attention_bias'={raw.get('attention_bias')!r} is not supported "
                          "(q/k/v/o projection biases)")
    return {}


def number(value, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: field {field!r}={value!r} must be a number")
    return float(value)


def family_fields(raw, model_type, hidden_size, where, rope) -> dict[str, Any]:
    """ModelConfig fields that reproduce the family's layer (norm placement, scales, soft-caps); rope: the
    full-attention layers' RopeConfig."""
    gemma = model_type.startswith("gemma")
    olmo = model_type in ("olmo2", "olmo3")
    post_norms_only = olmo or model_type == "exaone4"  # RMSNorm after attention and MLP only
    fields: dict[str, Any] = {
        "qk_norm": model_type in ("qwen3", "qwen3_moe", "gemma3_text", "exaone4") or olmo,
        "qk_norm_over_heads": olmo,  # OLMo 2/3: one RMSNorm over all heads' concatenated dims
        "pre_norm": not post_norms_only,
        "sandwich_norm": gemma or post_norms_only or model_type == "glm4",
        "norm_plus_one": gemma,
        "norm_scale_float32": olmo or model_type == "gpt_oss",  # GptOssRMSNorm scales in float32
        "attention_sinks": model_type == "gpt_oss",
        "rope_interleaved": model_type in ("glm", "glm4"),
    }
    if gemma:
        qpas = raw.get("query_pre_attn_scalar")
        fields["embed_scale"] = hidden_size ** 0.5
        fields["query_scale"] = number(qpas, where, "query_pre_attn_scalar") ** -0.5 if qpas else 0.0
        # transformers' Gemma 3 attention takes no softcap (attn_logit_softcapping is read by Gemma 2 only)
        attn_cap = raw.get("attn_logit_softcapping") if model_type == "gemma2" else None
        final_cap = raw.get("final_logit_softcapping")
        fields["attn_logit_softcap"] = number(attn_cap, where, "attn_logit_softcapping") if attn_cap else None
        fields["final_logit_softcap"] = number(final_cap, where, "final_logit_softcapping") if final_cap else None
    if model_type == "granite":  # GraniteConfig's four multipliers (1.0 when absent)
        fields["embed_scale"] = number(raw.get("embedding_multiplier", 1.0), where, "embedding_multiplier")
        fields["query_scale"] = number(raw.get("attention_multiplier", 1.0), where, "attention_multiplier")
        fields["residual_scale"] = number(raw.get("residual_multiplier", 1.0), where, "residual_multiplier")
        fields["logits_scaling"] = number(raw.get("logits_scaling", 1.0), where, "logits_scaling")
        if fields["query_scale"] == 0 or fields["logits_scaling"] == 0:
            raise ConfigError(f"{where}: fields 'attention_multiplier' and 'logits_scaling' must be non-zero")
    if model_type == "ministral3":
        fields |= _position_query_scale(raw, rope, where)
    if model_type in hybrid_config.HYBRID_TYPES:
        fields |= hybrid_config.hybrid_fields(raw, where)
    if model_type in moe_config.MOE_TYPES:
        fields |= moe_config.moe_fields(raw, raw["num_hidden_layers"], where)
    if model_type in deepseek_config.DEEPSEEK_TYPES:
        fields |= deepseek_config.deepseek_fields(raw, rope, where)
    return fields


def _position_query_scale(raw, rope, where) -> dict[str, Any]:
    """Ministral 3 scales its queries by 1 + beta * log(1 + floor(position / span)) (Llama 4's attention
    temperature), beta = llama_4_scaling_beta and span = original_max_position_embeddings of the rope dict."""
    key = "rope_scaling" if raw.get("rope_scaling") is not None else "rope_parameters"
    params = raw.get(key) if isinstance(raw.get(key), dict) else {}
    beta = params.get("llama_4_scaling_beta")
    if beta is None:  # transformers' Ministral3Attention cannot run without it
        raise ConfigError(f"{where}: field {key!r} has no 'llama_4_scaling_beta' (model_type='ministral3')")
    beta = number(beta, where, f"{key}.llama_4_scaling_beta")
    # transformers resolves the span as the rope does for yarn, llama3 and longrope; for other ropes it is
    # the dict's own entry
    span = (rope.original_max_position if rope.kind in ("yarn", "llama3", "longrope")
            else params.get("original_max_position_embeddings"))
    if isinstance(span, bool) or not isinstance(span, int) or span < 1:
        raise ConfigError(f"{where}: field {key!r}.original_max_position_embeddings={span!r} must be a positive "
                          "integer (model_type='ministral3')")
    return {"query_scale_beta": beta, "query_scale_span": span}
