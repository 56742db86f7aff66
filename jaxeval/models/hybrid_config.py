"""config.json fields of the hybrid decoders (Qwen3.5: Gated DeltaNet and gated full attention layers).

Read as transformers 5.x's Qwen3_5TextConfig / Qwen3_5Config read them; families.py calls in here for
the model types listed in HYBRID_TYPES.
"""

from __future__ import annotations

from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models.gated_delta import GDNDims

HYBRID_TYPES = ("qwen3_5_text", "qwen3_5_moe_text")
COMPOSITE_TYPES = {"qwen3_5": "qwen3_5_text", "qwen3_5_moe": "qwen3_5_moe_text"}  # conditional generation -> text
_GDN_FIELDS = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
               "linear_conv_kernel_dim")


def qwen3_5_text_tower(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """Qwen3_5Config / Qwen3_5MoeConfig (model_type qwen3_5 / qwen3_5_moe, the conditional-generation
    checkpoints) -> its text tower.

    Tying follows the top level, as transformers' Qwen3_5(Moe)ForConditionalGeneration ties its lm_head by the
    composite config's tie_word_embeddings (False unless set), not text_config's.
    """
    kind = raw.get("model_type")
    text = raw.get("text_config")
    if not isinstance(text, dict):
        raise ConfigError(f"{where}: model_type={kind!r} but field 'text_config' is {text!r}")
    special = {k: raw[k] for k in ("bos_token_id", "eos_token_id") if raw.get(k) is not None}
    return {**text, **special, "model_type": COMPOSITE_TYPES[kind],
            "tie_word_embeddings": bool(raw.get("tie_word_embeddings", False))}


def default_layer_types(raw: dict[str, Any], num_layers: int, where: str) -> list[str]:
    """Qwen3_5TextConfig without layer_types: full attention every full_attention_interval-th layer (4)."""
    interval = raw.get("full_attention_interval", 4)
    if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
        raise ConfigError(f"{where}: field 'full_attention_interval'={interval!r} must be a positive integer")
    return ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(num_layers)]


def hybrid_fields(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """ModelConfig fields of a Qwen3.5 text tower: (1 + w) RMSNorms, per-head q/k norms, the attention output
    gate and the Gated DeltaNet sizes."""
    sizes = {}
    for key in _GDN_FIELDS:
        value = raw.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
        sizes[key] = value
    if sizes["linear_num_value_heads"] % sizes["linear_num_key_heads"]:
        raise ConfigError(f"{where}: field 'linear_num_value_heads'={sizes['linear_num_value_heads']} is not a "
                          f"multiple of 'linear_num_key_heads'={sizes['linear_num_key_heads']}")
    if sizes["linear_conv_kernel_dim"] < 2:
        raise ConfigError(f"{where}: field 'linear_conv_kernel_dim'={sizes['linear_conv_kernel_dim']} must be at "
                          "least 2 (the convolution state holds kernel - 1 inputs)")
    if raw.get("hidden_act", "silu") != "silu":  # the GDN convolution's activation is hidden_act too
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for "
                          f"model_type={raw.get('model_type')!r} (silu only)")
    dims = GDNDims(raw["hidden_size"], sizes["linear_num_key_heads"], sizes["linear_num_value_heads"],
                   sizes["linear_key_head_dim"], sizes["linear_value_head_dim"], sizes["linear_conv_kernel_dim"])
    return {"qk_norm": True, "norm_plus_one": True, "attention_output_gate": True, "linear_attention": dims}
