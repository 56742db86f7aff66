"""The parameter layout, in one table: each parameter's logical axes, HF name and HF layout.

Everything that needs to know the layout derives it from `TOP` and `LAYERS`:
  param_shapes(c)     the nested dict of shapes (decoder init, checkpoints, shardings);
  PARAM_AXES          each parameter's logical axes (jaxeval.models.sharding maps them onto a mesh);
  hf_name / hf_shape / to_ours / fused_rows   how jaxeval.models.hf_weights reads HF tensors.

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
HF linear weights are [out, in]; ours are [in..., out...] so the einsums read naturally.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np

from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import hybrid_param_axes, hybrid_param_shapes, is_hybrid


def axis_sizes(c: ModelConfig) -> dict[str, int]:
    """The size of each logical parameter axis for config c."""
    return {"layers": c.num_layers, "vocab": c.vocab_size, "embed": c.hidden_size, "norm": c.hidden_size,
            "heads": c.num_heads, "kv_heads": c.num_kv_heads, "head_dim": c.head_dim, "mlp": c.intermediate_size,
            "experts": c.moe.num_experts if c.moe else 0, "moe_mlp": c.moe_intermediate_size}


def _always(c: ModelConfig) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter: its logical axes (hence its shape), where it sits in a HF checkpoint, its init.

    hf_layout: "same" (HF tensor as ours), "flat" (HF 1-D, ours its reshape), "linear"
    (HF [out, in], ours [in..., out...] with the first `inputs` of our dims the input), or "experts"
    (one HF [out, in] tensor per expert, `hf` naming them with {} for the expert index; ours
    [experts, in..., out...]).
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


@dataclasses.dataclass(frozen=True)
class Fused:
    """One HF tensor holding several of ours stacked by rows (in `parts` order), in some families."""

    hf: str
    parts: tuple[str, ...]
    families: tuple[str, ...]


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
    "wq": Param(("layers", "embed", "heads", "head_dim"), "self_attn.q_proj.weight", "linear"),
    "wk": Param(("layers", "embed", "kv_heads", "head_dim"), "self_attn.k_proj.weight", "linear"),
    "wv": Param(("layers", "embed", "kv_heads", "head_dim"), "self_attn.v_proj.weight", "linear"),
    "wo": Param(("layers", "heads", "head_dim", "embed"), "self_attn.o_proj.weight", "linear", inputs=2),
    "w_gate": Param(("layers", "embed", "mlp"), "mlp.gate_proj.weight", "linear", when=_dense_mlp),
    "w_up": Param(("layers", "embed", "mlp"), "mlp.up_proj.weight", "linear", when=_dense_mlp),
    "w_down": Param(("layers", "mlp", "embed"), "mlp.down_proj.weight", "linear", when=_dense_mlp),
    # Qwen3-MoE: the router and the experts in place of the dense MLP (jaxeval.models.moe)
    "router": Param(("layers", "embed", "experts"), "mlp.gate.weight", "linear", when=_moe),
    "moe_gate": Param(("layers", "experts", "embed", "moe_mlp"), "mlp.experts.{}.gate_proj.weight", "experts",
                      when=_moe),
    "moe_up": Param(("layers", "experts", "embed", "moe_mlp"), "mlp.experts.{}.up_proj.weight", "experts",
                    when=_moe),
    "moe_down": Param(("layers", "experts", "moe_mlp", "embed"), "mlp.experts.{}.down_proj.weight", "experts",
                      when=_moe),
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
         Fused("mlp.gate_up_proj.weight", ("w_gate", "w_up"), ("phi3", "glm", "glm4")))

PARAM_AXES: dict[str, tuple[str, ...]] = {name: p.axes for name, p in (TOP | LAYERS).items()}


def shape_of(p: Param, c: ModelConfig) -> tuple[int, ...]:
    sizes = axis_sizes(c)
    return tuple(sizes[a] for a in p.axes)


def param_shapes(c: ModelConfig) -> dict:
    """Nested dict of shapes: {"embed", "final_norm", "layers": {...}, "lm_head" unless tied}; a hybrid's
    (Qwen3.5) has "linear_layers" too (jaxeval.models.hybrid_layout)."""
    if is_hybrid(c):
        return hybrid_param_shapes(c)
    layers = {name: shape_of(p, c) for name, p in LAYERS.items() if p.when(c)}
    shapes = {"embed": shape_of(TOP["embed"], c), "final_norm": shape_of(TOP["final_norm"], c), "layers": layers}
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


def hf_shape(name: str, ours: tuple[int, ...]) -> tuple[int, ...]:
    """The HF shape of one (per-layer) tensor whose shape in our layout is `ours`."""
    p = param(name)
    if p.hf_layout == "experts":  # each expert's tensor
        ours = ours[1:]
    if p.hf_layout in ("linear", "experts"):
        return (math.prod(ours[p.inputs:]), math.prod(ours[:p.inputs]))
    if p.hf_layout == "flat":
        return (math.prod(ours),)
    return tuple(ours)


def to_ours(name: str, w: np.ndarray, ours: tuple[int, ...]) -> np.ndarray:
    """One (per-layer) HF tensor -> our layout (a view: a shard still reads only its own bytes)."""
    layout = param(name).hf_layout
    if layout == "experts":  # w: the experts' HF tensors stacked [experts, out, in] (a copy, not a view)
        return np.swapaxes(w, 1, 2).reshape(ours)
    if layout == "linear":
        return w.T.reshape(ours)
    if layout == "flat":
        return w.reshape(ours)
    return w


def fused_rows(name: str, c: ModelConfig) -> tuple[int, slice] | None:
    """(rows of the whole fused HF tensor, our tensor's rows in it), or None if `name` is not fused there."""
    fused = _fused(name, c)
    if fused is None:
        return None
    rows = [hf_shape(part, shape_of(LAYERS[part], c)[1:])[0] for part in fused.parts]
    start = sum(rows[:fused.parts.index(name)])
    return sum(rows), slice(start, start + rows[fused.parts.index(name)])
