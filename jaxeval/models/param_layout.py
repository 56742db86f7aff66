"""The parameter layout, in one table: each parameter's logical axes, HF name and HF layout.

Everything that needs to know the layout derives it from `TOP` and `LAYERS`:
  param_shapes(c)     the nested dict of shapes (decoder init, checkpoints, shardings);
  PARAM_AXES          each parameter's logical axes (jaxeval.models.sharding maps them onto a mesh);
  hf_name / hf_shape / to_ours / fused_rows   how jaxeval.weights.hf_weights reads HF tensors.

A shape is the sizes of its logical axes (`axis_sizes`), so axes and shape cannot disagree.
Per-layer parameters are stacked: their first axis is "layers", and their HF tensors are read
per layer (`layers.{i}.<hf name>`), so the HF layout applies to the dims after "layers".

Sizes (L layers, D hidden, H heads, KV kv-heads, hd head dim, F mlp, V vocab):
  embed [V, D]; lm_head [D, V] unless tied; final_norm [D]
  layers/: wq [L, D, H, hd]; wk, wv [L, D, KV, hd]; wo [L, H, hd, D]; w_gate, w_up [L, D, F]; w_down [L, F, D]
           attn_norm, mlp_norm [L, D] (pre norms; not in OLMo 2/3)
           optional: bq [L, H, hd], bk, bv [L, KV, hd]; q_norm, k_norm [L, hd] (per head) or
           q_norm_heads [L, H, hd], k_norm_heads [L, KV, hd] (over all heads, OLMo 2/3);
           post_attn_norm, post_mlp_norm [L, D] (on the attention / MLP outputs: Gemma, GLM-4, OLMo 2/3)
           MoE (E experts, I expert width): router [L, D, E]; moe_gate, moe_up [L, E, D, I]; moe_down [L, E, I, D];
           gpt-oss also bo [L, D]; sinks [L, H]; router_bias [L, E]; moe_gate_bias, moe_up_bias [L, E, I];
           moe_down_bias [L, E, D]
           MoE: router [L, D, E], moe_gate/up [L, E, D, I], moe_down [L, E, I, D]; DeepSeek-V3 also
           moe_score_bias [L, E], shared_gate/up [L, D, Is], shared_down [L, Is, D]
           DeepSeek-V3's latent attention in place of wq/wk/wv/wo: see jaxeval.models.mla
A model of two layer stacks (jaxeval.models.layer_stacks) has "dense_layers" beside "layers", each with
its own "layers" size; HF layer numbers count on from one stack to the next.
HF linear weights are [out, in]; ours are [in..., out...] so the einsums read naturally.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np

from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import hybrid_param_axes, hybrid_param_shapes, is_hybrid
from jaxeval.models.layer_stacks import layer_stacks


def axis_sizes(c: ModelConfig) -> dict[str, int]:
    """The size of each logical parameter axis for config c."""
    return {"layers": c.num_layers, "vocab": c.vocab_size, "embed": c.hidden_size, "norm": c.hidden_size,
            "heads": c.num_heads, "kv_heads": c.num_kv_heads, "head_dim": c.head_dim, "mlp": c.intermediate_size,
            "experts": c.moe.num_experts if c.moe else 0, "moe_mlp": c.moe_intermediate_size,
            "shared_mlp": c.shared_expert_intermediate_size, **_mla_sizes(c)}


def _mla_sizes(c: ModelConfig) -> dict[str, int]:
    d = c.mla
    if d is None:
        return {}
    return {"q_lora": d.q_lora_rank, "kv_lora": d.kv_lora_rank, "kv_lora_rope": d.kv_lora_rank + d.qk_rope_head_dim,
            "qk_dim": d.qk_head_dim, "kv_b_dim": d.qk_nope_head_dim + d.v_head_dim, "v_dim": d.v_head_dim}


def _always(c: ModelConfig) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter: its logical axes (hence its shape), where it sits in a HF checkpoint, its init.

    hf_layout: "same" (HF tensor as ours), "flat" (HF 1-D, ours its reshape), "linear"
    (HF [out, in], ours [in..., out...] with the first `inputs` of our dims the input), or "experts"
    (one HF [out, in] tensor per expert, `hf` naming them with {} for the expert index; ours
    [experts, in..., out...]); hf_family_layout: another layout in some families (model_type -> layout).
    init: "normal" (random weights), "norm" (a norm scale: ones, or zeros where the family adds one),
    "zeros" (biases).
    """

    axes: tuple[str, ...]
    hf: str
    hf_layout: str = "same"
    inputs: int = 1
    init: str = "normal"
    when: Callable[[ModelConfig], bool] = _always
    hf_family: Mapping[str, str] = dataclasses.field(default_factory=dict)  # model_type -> HF name
    hf_family_layout: Mapping[str, str] = dataclasses.field(default_factory=dict)  # model_type -> hf_layout


@dataclasses.dataclass(frozen=True)
class Fused:
    """One HF tensor holding several of ours stacked by rows (in `parts` order), in some families;
    interleaved: alternating along the last axis instead (gpt-oss's gate_up_proj: gate, up, gate, up, ...)."""

    hf: str
    parts: tuple[str, ...]
    families: tuple[str, ...]
    interleaved: bool = False


def _pre_norm(c):
    return c.pre_norm


def _bias(c):
    return c.qkv_bias


def _head_norm(c):
    return c.qk_norm and not c.qk_norm_over_heads


def _all_heads_norm(c):
    return c.qk_norm and c.qk_norm_over_heads


def _sandwich(c):
    return c.sandwich_norm


def _untied(c):
    return not c.tie_word_embeddings


def _moe(c):
    return c.moe is not None


def _dense_mlp(c):
    return c.moe is None


def _o_bias(c):
    return c.o_bias


def _sinks(c):
    return c.attention_sinks


def _expert_biases(c):
    return c.moe is not None and c.moe.family == "gpt_oss"
def _shared_experts(c):
    return c.moe is not None and c.moe.family == "deepseek_v3"


def _qkv(c):
    return c.mla is None


def _mla_q(c):
    return c.mla is not None and not c.mla.q_lora_rank


def _mla_q_lora(c):
    return c.mla is not None and bool(c.mla.q_lora_rank)


def _mla(c):
    return c.mla is not None


# Where a family's norms sit: the same HF name means a different norm from one family to the next
# (post_attention_layernorm feeds the MLP in Llama and GLM-4, follows attention in Gemma and OLMo 2).
_GEMMA_MLP_NORM = {"gemma2": "pre_feedforward_layernorm.weight", "gemma3_text": "pre_feedforward_layernorm.weight"}

# Top-level parameters (HF names under the text model's prefix; lm_head sits beside the model).
TOP: dict[str, Param] = {
    "embed": Param(("vocab", "embed"), "embed_tokens.weight"),
    "final_norm": Param(("norm",), "norm.weight", init="norm"),
    "lm_head": Param(("embed", "vocab"), "lm_head.weight", "linear", when=_untied),
}

# Stacked per-layer parameters, in the order param_shapes lists them (HF names under `layers.{i}.`).
LAYERS: dict[str, Param] = {
    "wq": Param(("layers", "embed", "heads", "head_dim"), "self_attn.q_proj.weight", "linear", when=_qkv),
    "wk": Param(("layers", "embed", "kv_heads", "head_dim"), "self_attn.k_proj.weight", "linear", when=_qkv),
    "wv": Param(("layers", "embed", "kv_heads", "head_dim"), "self_attn.v_proj.weight", "linear", when=_qkv),
    "wo": Param(("layers", "heads", "head_dim", "embed"), "self_attn.o_proj.weight", "linear", inputs=2, when=_qkv),
    # DeepSeek-V3: multi-head latent attention (jaxeval.models.mla)
    "mla_q": Param(("layers", "embed", "heads", "qk_dim"), "self_attn.q_proj.weight", "linear", when=_mla_q),
    "mla_q_a": Param(("layers", "embed", "q_lora"), "self_attn.q_a_proj.weight", "linear", when=_mla_q_lora),
    "mla_q_a_norm": Param(("layers", "q_lora"), "self_attn.q_a_layernorm.weight", init="norm", when=_mla_q_lora),
    "mla_q_b": Param(("layers", "q_lora", "heads", "qk_dim"), "self_attn.q_b_proj.weight", "linear",
                     when=_mla_q_lora),
    "mla_kv_a": Param(("layers", "embed", "kv_lora_rope"), "self_attn.kv_a_proj_with_mqa.weight", "linear",
                      when=_mla),
    "mla_kv_a_norm": Param(("layers", "kv_lora"), "self_attn.kv_a_layernorm.weight", init="norm", when=_mla),
    "mla_kv_b": Param(("layers", "kv_lora", "heads", "kv_b_dim"), "self_attn.kv_b_proj.weight", "linear",
                      when=_mla),
    "mla_o": Param(("layers", "heads", "v_dim", "embed"), "self_attn.o_proj.weight", "linear", inputs=2, when=_mla),
    "w_gate": Param(("layers", "embed", "mlp"), "mlp.gate_proj.weight", "linear", when=_dense_mlp),
    "w_up": Param(("layers", "embed", "mlp"), "mlp.up_proj.weight", "linear", when=_dense_mlp),
    "w_down": Param(("layers", "mlp", "embed"), "mlp.down_proj.weight", "linear", when=_dense_mlp),
    # MoE (Qwen3-MoE, Mixtral): the router and the experts in place of the dense MLP (jaxeval.models.moe)
    # gpt-oss keeps its experts fused, [in, out] ([E, D, 2I] gate and up interleaved, [E, I, D]), with biases
    "router": Param(("layers", "embed", "experts"), "mlp.gate.weight", "linear", when=_moe,
                    hf_family={"mixtral": "block_sparse_moe.gate.weight", "gpt_oss": "mlp.router.weight"}),
    "moe_gate": Param(("layers", "experts", "embed", "moe_mlp"), "mlp.experts.{}.gate_proj.weight", "experts",
                      when=_moe, hf_family={"mixtral": "block_sparse_moe.experts.{}.w1.weight"},
                      hf_family_layout={"gpt_oss": "same"}),
    "moe_up": Param(("layers", "experts", "embed", "moe_mlp"), "mlp.experts.{}.up_proj.weight", "experts",
                    when=_moe, hf_family={"mixtral": "block_sparse_moe.experts.{}.w3.weight"},
                    hf_family_layout={"gpt_oss": "same"}),
    "moe_down": Param(("layers", "experts", "moe_mlp", "embed"), "mlp.experts.{}.down_proj.weight", "experts",
                      when=_moe, hf_family={"mixtral": "block_sparse_moe.experts.{}.w2.weight",
                                            "gpt_oss": "mlp.experts.down_proj"}, hf_family_layout={"gpt_oss": "same"}),
    "router_bias": Param(("layers", "experts"), "mlp.router.bias", init="zeros", when=_expert_biases),
    "moe_gate_bias": Param(("layers", "experts", "moe_mlp"), "mlp.experts.gate_up_proj_bias", init="zeros",
                           when=_expert_biases),
    "moe_up_bias": Param(("layers", "experts", "moe_mlp"), "mlp.experts.gate_up_proj_bias", init="zeros",
                         when=_expert_biases),
    # "norm": a hidden-sized vector, replicated (as the norms' scales)
    "moe_down_bias": Param(("layers", "experts", "norm"), "mlp.experts.down_proj_bias", init="zeros",
                           when=_expert_biases),
    "bo": Param(("layers", "norm"), "self_attn.o_proj.bias", init="zeros", when=_o_bias),
    "sinks": Param(("layers", "heads"), "self_attn.sinks", init="zeros", when=_sinks),
    # DeepSeek-V3: the router's score correction bias and the shared experts
    "moe_score_bias": Param(("layers", "experts"), "mlp.gate.e_score_correction_bias", init="zeros",
                            when=_shared_experts),
    "shared_gate": Param(("layers", "embed", "shared_mlp"), "mlp.shared_experts.gate_proj.weight", "linear",
                         when=_shared_experts),
    "shared_up": Param(("layers", "embed", "shared_mlp"), "mlp.shared_experts.up_proj.weight", "linear",
                       when=_shared_experts),
    "shared_down": Param(("layers", "shared_mlp", "embed"), "mlp.shared_experts.down_proj.weight", "linear",
                         when=_shared_experts),
    "attn_norm": Param(("layers", "norm"), "input_layernorm.weight", init="norm", when=_pre_norm),
    "mlp_norm": Param(("layers", "norm"), "post_attention_layernorm.weight", init="norm", when=_pre_norm,
                      hf_family=_GEMMA_MLP_NORM),
    "bq": Param(("layers", "heads", "head_dim"), "self_attn.q_proj.bias", "flat", init="zeros", when=_bias),
    "bk": Param(("layers", "kv_heads", "head_dim"), "self_attn.k_proj.bias", "flat", init="zeros", when=_bias),
    "bv": Param(("layers", "kv_heads", "head_dim"), "self_attn.v_proj.bias", "flat", init="zeros", when=_bias),
    "q_norm_heads": Param(("layers", "heads", "head_dim"), "self_attn.q_norm.weight", "flat", init="norm",
                          when=_all_heads_norm),
    "k_norm_heads": Param(("layers", "kv_heads", "head_dim"), "self_attn.k_norm.weight", "flat", init="norm",
                          when=_all_heads_norm),
    "q_norm": Param(("layers", "head_dim"), "self_attn.q_norm.weight", init="norm", when=_head_norm),
    "k_norm": Param(("layers", "head_dim"), "self_attn.k_norm.weight", init="norm", when=_head_norm),
    "post_attn_norm": Param(("layers", "norm"), "post_attention_layernorm.weight", init="norm", when=_sandwich,
                            hf_family={"glm4": "post_self_attn_layernorm.weight"}),
    "post_mlp_norm": Param(("layers", "norm"), "post_feedforward_layernorm.weight", init="norm", when=_sandwich,
                           hf_family={"glm4": "post_mlp_layernorm.weight"}),
}

FUSED = (Fused("self_attn.qkv_proj.weight", ("wq", "wk", "wv"), ("phi3",)),
         Fused("mlp.gate_up_proj.weight", ("w_gate", "w_up"), ("phi3", "glm", "glm4")),
         Fused("mlp.experts.gate_up_proj", ("moe_gate", "moe_up"), ("gpt_oss",), interleaved=True),
         Fused("mlp.experts.gate_up_proj_bias", ("moe_gate_bias", "moe_up_bias"), ("gpt_oss",), interleaved=True))

PARAM_AXES: dict[str, tuple[str, ...]] = {name: p.axes for name, p in (TOP | LAYERS).items()}


def shape_of(p: Param, c: ModelConfig) -> tuple[int, ...]:
    sizes = axis_sizes(c)
    return tuple(sizes[a] for a in p.axes)


def param_shapes(c: ModelConfig) -> dict:
    """Nested dict of shapes: {"embed", "final_norm", "layers": {...}, "lm_head" unless tied}, and
    "dense_layers" for a model of two layer stacks; a hybrid's (Qwen3.5) has "linear_layers" too
    (jaxeval.models.hybrid_layout)."""
    if is_hybrid(c):
        return hybrid_param_shapes(c)
    shapes = {"embed": shape_of(TOP["embed"], c), "final_norm": shape_of(TOP["final_norm"], c)}
    for stack in layer_stacks(c):
        shapes[stack.name] = {name: (stack.count, *shape_of(p, stack.config)[1:]) for name, p in LAYERS.items()
                              if p.when(stack.config)}
    if TOP["lm_head"].when(c):
        shapes["lm_head"] = shape_of(TOP["lm_head"], c)
    return shapes


def param_axes(c: ModelConfig) -> dict:
    """Each parameter's logical axes: PARAM_AXES (keyed by name), or a hybrid's nested table matching
    param_shapes (its two stacks name their tensors alike)."""
    return hybrid_param_axes(c) if is_hybrid(c) else PARAM_AXES


def param(name: str) -> Param:
    return LAYERS[name] if name in LAYERS else TOP[name]


def _fused(name: str, c: ModelConfig) -> Fused | None:
    return next((f for f in FUSED if name in f.parts and c.model_type in f.families), None)


def hf_name(name: str, c: ModelConfig) -> str:
    """The HF tensor name holding our parameter `name` in family c.model_type (fused ones included)."""
    fused = _fused(name, c)
    if fused is not None:
        return fused.hf
    p = param(name)
    return p.hf_family.get(c.model_type, p.hf)


def hf_layout(name: str, c: ModelConfig | None = None) -> str:
    """The HF layout of our parameter `name` in family c.model_type (the common one without c)."""
    p = param(name)
    return p.hf_layout if c is None else p.hf_family_layout.get(c.model_type, p.hf_layout)


def hf_shape(name: str, ours: tuple[int, ...], c: ModelConfig | None = None) -> tuple[int, ...]:
    """The HF shape of one (per-layer) tensor whose shape in our layout is `ours` (c: see hf_layout)."""
    p, layout = param(name), hf_layout(name, c)
    if layout == "experts":  # each expert's tensor
        ours = ours[1:]
    if layout in ("linear", "experts"):
        return (math.prod(ours[p.inputs:]), math.prod(ours[:p.inputs]))
    if layout == "flat":
        return (math.prod(ours),)
    return tuple(ours)


def to_ours(name: str, w: np.ndarray, ours: tuple[int, ...], c: ModelConfig | None = None) -> np.ndarray:
    """One (per-layer) HF tensor -> our layout (a view: a shard still reads only its own bytes)."""
    layout = hf_layout(name, c)
    if layout == "experts":  # w: the experts' HF tensors stacked [experts, out, in] (a copy, not a view)
        return np.swapaxes(w, 1, 2).reshape(ours)
    if layout == "linear":
        return w.T.reshape(ours)
    if layout == "flat":
        return w.reshape(ours)
    return w


def fused_columns(name: str, c: ModelConfig) -> tuple[int, int] | None:
    """(parts, our part's index) of an interleaved fused HF tensor (ours: its last axis [index::parts]), or
    None if `name` is not interleaved there."""
    fused = _fused(name, c)
    if fused is None or not fused.interleaved:
        return None
    return len(fused.parts), fused.parts.index(name)


def fused_rows(name: str, c: ModelConfig) -> tuple[int, slice] | None:
    """(rows of the whole fused HF tensor, our tensor's rows in it), or None if `name` is not fused by rows there."""
    fused = _fused(name, c)
    if fused is None or fused.interleaved:
        return None
    rows = [hf_shape(part, shape_of(LAYERS[part], c)[1:])[0] for part in fused.parts]
    start = sum(rows[:fused.parts.index(name)])
    return sum(rows), slice(start, start + rows[fused.parts.index(name)])
