"""config.json fields of the mixture-of-experts decoders (Qwen3-MoE, Qwen3.5-MoE, Mixtral, gpt-oss), as transformers 5.x reads them.

families.py calls in here for the model types in MOE_TYPES. The MoE block replaces each layer's MLP
(jaxeval.models.moe: routing exactly as the family's router, dropless sorted dispatch).

Qwen3-MoE: num_experts (v5 saves num_local_experts), num_experts_per_tok, moe_intermediate_size,
norm_topk_prob; the layers mlp_only_layers or decoder_sparse_step leave dense (intermediate_size) must
be the first ones, which the decoder runs as a stack of their own (jaxeval.models.layer_stacks).
Mixtral: num_local_experts (default 8), num_experts_per_tok (2), the experts' width is
intermediate_size; the router always renormalises its top-k.
gpt-oss: num_local_experts (128), num_experts_per_tok (4), width intermediate_size, the clamped SwiGLU's
swiglu_alpha (1.702) and swiglu_limit (7.0); its experts ignore hidden_act.
Qwen3.5-MoE (SHARED_EXPERT_TYPES) adds the sigmoid-gated shared expert, a gated MLP of
shared_expert_intermediate_size that every token runs: it is the layer's dense MLP
(ModelConfig.intermediate_size, w_gate/w_up/w_down).
"""

from __future__ import annotations

from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models.moe import MoESpec

MOE_TYPES = ("qwen3_moe", "mixtral", "gpt_oss", "qwen3_5_moe_text")
SHARED_EXPERT_TYPES = ("qwen3_5_moe_text",)

# the transformers config class defaults: (experts, experts per token)
_COUNTS = {"qwen3_moe": (128, 8), "mixtral": (8, 2), "gpt_oss": (128, 4)}


def _positive(raw, key, where, value=None) -> int:
    value = raw.get(key) if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
    return value


def _number(raw, key, default, where) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: field {key!r}={value!r} must be a number")
    return float(value)


def _counts(raw, model_type, where) -> tuple[int, int]:
    """(experts, experts per token) of the config, each a positive int, top-k at most the experts."""
    key = "num_experts" if raw.get("num_experts") is not None else "num_local_experts"  # v5 saves the latter
    default_experts, default_top_k = _COUNTS[model_type]
    experts = _positive(raw, key, where, raw.get(key, default_experts))
    top_k = _positive(raw, "num_experts_per_tok", where, raw.get("num_experts_per_tok", default_top_k))
    if top_k > experts:
        raise ConfigError(f"{where}: field 'num_experts_per_tok'={top_k} exceeds {key}={experts}")
    return experts, top_k


def _silu_experts(raw, where):
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for the experts "
                          "(silu only)")


def moe_fields(raw: dict[str, Any], num_layers: int, where: str) -> dict[str, Any]:
    """ModelConfig fields of a MoE decoder: the routing (MoESpec) and the experts' width."""
    model_type = raw["model_type"]
    if model_type in SHARED_EXPERT_TYPES:
        return _qwen3_5_moe_fields(raw, where)
    experts, top_k = _counts(raw, model_type, where)
    if model_type == "gpt_oss":
        width = _positive(raw, "intermediate_size", where)
        alpha, limit = (_number(raw, key, default, where) for key, default in (("swiglu_alpha", 1.702),
                                                                              ("swiglu_limit", 7.0)))
        return {"moe": MoESpec("gpt_oss", experts, top_k, swiglu_alpha=alpha, swiglu_limit=limit),
                "moe_intermediate_size": width}
    _silu_experts(raw, where)
    if model_type == "mixtral":
        width = _positive(raw, "intermediate_size", where)
        return {"moe": MoESpec("mixtral", experts, top_k), "moe_intermediate_size": width}
    width = _positive(raw, "moe_intermediate_size", where, raw.get("moe_intermediate_size", 768))
    step = _positive(raw, "decoder_sparse_step", where, raw.get("decoder_sparse_step", 1))
    dense_only = raw.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
        raise ConfigError(f"{where}: field 'mlp_only_layers'={dense_only!r} must be a list of layer indices")
    dense = [i for i in range(num_layers) if i in dense_only or (i + 1) % step]
    if dense != list(range(len(dense))):  # the decoder runs dense layers as a first stack (jaxeval.models.layer_stacks)
        gap = next(i for i in range(num_layers) if i not in dense)
        late = next(i for i in dense if i > gap)
        field = "mlp_only_layers" if late in dense_only else "decoder_sparse_step"
        raise ConfigError(f"{where}: field {field!r} makes layer {late} a dense MLP layer "
                          f"after the sparse layer {gap}; jaxeval runs Qwen3-MoE models whose dense layers, if any, "
                          "are the first ones")
    norm = raw.get("norm_topk_prob", False)
    if not isinstance(norm, bool):
        raise ConfigError(f"{where}: field 'norm_topk_prob'={norm!r} must be true or false")
    if len(dense) == num_layers:  # no sparse layer at all: a dense model
        return {}
    return {"moe": MoESpec("qwen3_moe", experts, top_k, norm), "moe_intermediate_size": width,
            "dense_layers": len(dense)}


def _qwen3_5_moe_fields(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """Qwen3_5MoeTextConfig: every layer sparse (no decoder_sparse_step or mlp_only_layers), its router always
    renormalises the top-k probabilities (no norm_topk_prob), and the shared expert's width is checked here
    (families.with_class_defaults made it intermediate_size)."""
    experts = _positive(raw, "num_experts", where)
    top_k = _positive(raw, "num_experts_per_tok", where)
    if top_k > experts:
        raise ConfigError(f"{where}: field 'num_experts_per_tok'={top_k} exceeds num_experts={experts}")
    width = _positive(raw, "moe_intermediate_size", where)
    _positive(raw, "shared_expert_intermediate_size", where)
    _silu_experts(raw, where)
    return {"moe": MoESpec("qwen3_5_moe", experts, top_k), "moe_intermediate_size": width}
