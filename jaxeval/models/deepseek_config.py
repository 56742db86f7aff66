"""config.json fields of DeepSeek-V3 (model_type deepseek_v3), as transformers 5.x's DeepseekV3Config reads them.

families.py calls in here. DeepSeek-V3 is the one decoder with three things switched on:
  - multi-head latent attention (jaxeval.models.mla), run as multi-query attention over the cached
    [k_rope, c_kv] of each token: one KV head of width qk_rope_head_dim + kv_lora_rank, the rotary
    dims first (so rotary_dim = qk_rope_head_dim), interleaved pairs when rope_interleave;
  - the softmax scale qk_head_dim ** -0.5, times yarn_get_mscale(factor, mscale_all_dim) ** 2 when the
    rope is not the default one and its mscale_all_dim is set (transformers' yarn_apply_mscale);
  - sigmoid routing limited to topk_group of n_group expert groups, plus the shared experts
    (jaxeval.models.moe, family deepseek_v3), on every layer from first_k_dense_replace on; the
    layers before it have the dense MLP (intermediate_size): the decoder's two layer stacks
    (jaxeval.models.layer_stacks).
"""

from __future__ import annotations

import math
from typing import Any

from jaxeval.errors import ConfigError
from jaxeval.models.mla import MLADims
from jaxeval.models.moe import MoESpec

DEEPSEEK_TYPES = ("deepseek_v3",)

# DeepseekV3Config's class defaults for the fields below (a hub config.json may leave any out)
DEFAULTS = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
            "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4,
            "n_shared_experts": 1, "moe_intermediate_size": 2048, "first_k_dense_replace": 3,
            "routed_scaling_factor": 2.5, "norm_topk_prob": True, "rope_interleave": True}


def _get(raw, key):
    return DEFAULTS[key] if raw.get(key) is None and key != "q_lora_rank" else raw.get(key, DEFAULTS[key])


def _int(raw, key, where, low=1) -> int:
    value = _get(raw, key)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{where}: field {key!r}={value!r} must be an integer >= {low} (model_type='deepseek_v3')")
    return value


def _flag(raw, key, where) -> bool:
    value = _get(raw, key)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: field {key!r}={value!r} must be true or false")
    return value


def _mscale(scale: float, mscale: float) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def softmax_scale(raw, rope, qk_head_dim: int, where: str) -> float:
    """transformers' DeepseekV3Attention.scaling: yarn_apply_mscale(rope_parameters, qk_head_dim ** -0.5)."""
    scale = qk_head_dim ** -0.5
    key = "rope_scaling" if raw.get("rope_scaling") is not None else "rope_parameters"
    params = raw.get(key) if isinstance(raw.get(key), dict) else {}
    mscale_all_dim = params.get("mscale_all_dim", 0)
    if rope.kind != "default" and mscale_all_dim:
        if isinstance(mscale_all_dim, bool) or not isinstance(mscale_all_dim, (int, float)):
            raise ConfigError(f"{where}: field '{key}.mscale_all_dim'={mscale_all_dim!r} must be a number")
        m = _mscale(rope.factor, float(mscale_all_dim))
        scale = scale * m * m
    return scale


def deepseek_fields(raw: dict[str, Any], rope, where: str) -> dict[str, Any]:
    """ModelConfig fields of a DeepSeek-V3 config.json (they replace the common reading's head sizes)."""
    heads = raw["num_attention_heads"]
    kv_heads = raw.get("num_key_value_heads")
    if kv_heads is not None and kv_heads != heads:  # transformers' MLA repeats the expanded K/V heads by H / KV
        raise ConfigError(f"{where}: field 'num_key_value_heads'={kv_heads!r} must equal num_attention_heads={heads} "
                          "(multi-head latent attention expands one latent to every head)")
    q_lora = _get(raw, "q_lora_rank")
    if q_lora is not None and (isinstance(q_lora, bool) or not isinstance(q_lora, int) or q_lora < 1):
        raise ConfigError(f"{where}: field 'q_lora_rank'={q_lora!r} must be null or a positive integer")
    dims = MLADims(q_lora or 0, _int(raw, "kv_lora_rank", where), _int(raw, "qk_nope_head_dim", where),
                   _int(raw, "qk_rope_head_dim", where), _int(raw, "v_head_dim", where))
    if dims.qk_rope_head_dim % 2:
        raise ConfigError(f"{where}: field 'qk_rope_head_dim'={dims.qk_rope_head_dim} must be even")
    experts, top_k = _int(raw, "n_routed_experts", where), _int(raw, "num_experts_per_tok", where)
    groups, top_groups = _int(raw, "n_group", where), _int(raw, "topk_group", where)
    if experts % groups or experts // groups < 2:
        raise ConfigError(f"{where}: field 'n_group'={groups} must divide n_routed_experts={experts} into groups of "
                          "at least 2 experts (each group scores its top two)")
    if top_groups > groups:
        raise ConfigError(f"{where}: field 'topk_group'={top_groups} exceeds n_group={groups}")
    selectable = top_groups * (experts // groups)
    if top_k > selectable:
        raise ConfigError(f"{where}: field 'num_experts_per_tok'={top_k} exceeds the {selectable} experts of the "
                          "topk_group selected groups")
    if raw.get("hidden_act", "silu") != "silu":
        raise ConfigError(f"{where}: field 'hidden_act'={raw.get('hidden_act')!r} is not supported for "
                          "model_type='deepseek_v3' (silu only)")
    scaling = _get(raw, "routed_scaling_factor")
    if isinstance(scaling, bool) or not isinstance(scaling, (int, float)):
        raise ConfigError(f"{where}: field 'routed_scaling_factor'={scaling!r} must be a number")
    dense = _int(raw, "first_k_dense_replace", where, low=0)
    if dense > raw["num_hidden_layers"]:
        raise ConfigError(f"{where}: field 'first_k_dense_replace'={dense} exceeds num_hidden_layers="
                          f"{raw['num_hidden_layers']}")
    width = _int(raw, "moe_intermediate_size", where)
    attention = {"mla": dims, "head_dim": dims.cache_dim, "num_kv_heads": 1, "rotary_dim": dims.qk_rope_head_dim,
                 "rope_interleaved": _flag(raw, "rope_interleave", where),
                 "query_scale": softmax_scale(raw, rope, dims.qk_head_dim, where)}
    if dense == raw["num_hidden_layers"]:  # every layer dense: no experts at all
        return attention
    moe = MoESpec("deepseek_v3", experts, top_k, _flag(raw, "norm_topk_prob", where), groups, top_groups,
                  float(scaling))
    return {**attention, "moe": moe, "moe_intermediate_size": width,
            "shared_expert_intermediate_size": width * _int(raw, "n_shared_experts", where),
            "dense_layers": dense}
