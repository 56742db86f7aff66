"""config.json fields of the mixture-of-experts decoders (Qwen3-MoE, Qwen3.5-MoE), as transformers 5.x reads them.

families.py calls in here for the model types in MOE_TYPES. The MoE block replaces each layer's MLP
(jaxeval.models.moe: routing exactly as the family's router, dropless sorted dispatch). Qwen3.5-MoE
(SHARED_EXPERT_TYPES) adds the sigmoid-gated shared expert, a gated MLP of shared_expert_intermediate_size
that every token runs: it is the layer's dense MLP (ModelConfig.intermediate_size, w_gate/w_up/w_down).
"""

from __future__ import annotations

from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models.moe import MoESpec

MOE_TYPES = ("qwen3_moe", "qwen3_5_moe_text")
SHARED_EXPERT_TYPES = ("qwen3_5_moe_text",)


def _positive(raw, key, where, value=None) -> int:
    value = raw.get(key) if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
    return value


def moe_fields(raw: dict[str, Any], num_layers: int, where: str) -> dict[str, Any]:
    """ModelConfig fields of a MoE: the routing (MoESpec) and the experts' width."""
    if raw.get("model_type") in SHARED_EXPERT_TYPES:
        return _qwen3_5_moe_fields(raw, where)
    key = "num_experts" if raw.get("num_experts") is not None else "num_local_experts"  # v5 saves the latter
    experts = _positive(raw, key, where, raw.get(key, 128))
    top_k = _positive(raw, "num_experts_per_tok", where, raw.get("num_experts_per_tok", 8))
    if top_k > experts:
        raise ConfigError(f"{where}: field 'num_experts_per_tok'={top_k} exceeds {key}={experts}")
    width = _positive(raw, "moe_intermediate_size", where, raw.get("moe_intermediate_size", 768))
    step = _positive(raw, "decoder_sparse_step", where, raw.get("decoder_sparse_step", 1))
    dense_only = raw.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
        raise ConfigError(f"{where}: field 'mlp_only_layers'={dense_only!r} must be a list of layer indices")
    dense = [i for i in range(num_layers) if i in dense_only or (i + 1) % step]
    if dense:
        field = "mlp_only_layers" if any(i in dense_only for i in dense) else "decoder_sparse_step"
        raise ConfigError(f"{where}: field {field!r} makes layer {dense[0]} a dense MLP layer; jaxeval runs "
                          "Qwen3-MoE models whose every layer is sparse")
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for the experts "
                          "(silu only)")
    norm = raw.get("norm_topk_prob", False)
    if not isinstance(norm, bool):
        raise ConfigError(f"{where}: field 'norm_topk_prob'={norm!r} must be true or false")
    return {"moe": MoESpec("qwen3_moe", experts, top_k, norm), "moe_intermediate_size": width}


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
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for the experts "
                          "(silu only)")
    return {"moe": MoESpec("qwen3_5_moe", experts, top_k), "moe_intermediate_size": width}
