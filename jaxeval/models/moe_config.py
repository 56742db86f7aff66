"""config.json fields of the mixture-of-experts decoders (Qwen3-MoE), as transformers 5.x reads them.

families.py calls in here for the model types in MOE_TYPES. The MoE block replaces each layer's MLP
(jaxeval.models.moe: routing exactly as the family's router, dropless sorted dispatch), but in the layers
mlp_only_layers or decoder_sparse_step leave dense (intermediate_size): those must be the first layers,
which the decoder runs as a stack of their own (jaxeval.models.layer_stacks).
"""

from __future__ import annotations

from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models.moe import MoESpec

MOE_TYPES = ("qwen3_moe",)


def _positive(raw, key, where, value=None) -> int:
    value = raw.get(key) if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
    return value


def moe_fields(raw: dict[str, Any], num_layers: int, where: str) -> dict[str, Any]:
    """ModelConfig fields of a Qwen3-MoE: the routing (MoESpec) and the experts' width."""
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
    if dense != list(range(len(dense))):  # the decoder runs dense layers as a first stack (jaxeval.models.layer_stacks)
        gap = next(i for i in range(num_layers) if i not in dense)
        late = next(i for i in dense if i > gap)
        field = "mlp_only_layers" if late in dense_only else "decoder_sparse_step"
        raise ConfigError(f"{where}: field {field!r} makes layer {late} a dense MLP layer "
                          f"after the sparse layer {gap}; jaxeval runs Qwen3-MoE models whose dense layers, if any, "
                          "are the first ones")
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for the experts "
                          "(silu only)")
    norm = raw.get("norm_topk_prob", False)
    if not isinstance(norm, bool):
        raise ConfigError(f"{where}: field 'norm_topk_prob'={norm!r} must be true or false")
    if len(dense) == num_layers:  # no sparse layer at all: a dense model
        return {}
    return {"moe": MoESpec("qwen3_moe", experts, top_k, norm), "moe_intermediate_size": width,
            "dense_layers": len(dense)}
