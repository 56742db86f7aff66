"""Parameter and cache layout of the hybrid decoders (Qwen3.5), and how their layers group for the scan.

The layers of each kind are stacked separately: `layers` holds the full-attention layers (the one
decoder's layout, jaxeval.models.decoder, plus the output gate), `linear_layers` the Gated DeltaNet
layers (jaxeval.models.gated_delta's mixer tensors plus the norms and MLP). Sizes (Lf full and Ll
linear layers; D hidden, H heads, KV kv-heads, hd head dim, F mlp, V vocab; Hk, Hv, dk, dv, K the GDN's):
  embed [V, D]; lm_head [D, V] unless tied; final_norm [D]
  layers/: wq, wq_gate [Lf, D, H, hd]; wk, wv [Lf, D, KV, hd]; wo [Lf, H, hd, D]; q_norm, k_norm [Lf, hd];
           attn_norm, mlp_norm [Lf, D]; w_gate, w_up [Lf, D, F]; w_down [Lf, F, D]
  linear_layers/: wq, wk [Ll, D, Hk, dk]; wv, wz [Ll, D, Hv, dv]; wb, wa [Ll, D, Hv];
           conv_q, conv_k [Ll, K, Hk, dk]; conv_v [Ll, K, Hv, dv]; a_log, dt_bias [Ll, Hv]; norm [Ll, dv];
           wo [Ll, Hv, dv, D]; attn_norm, mlp_norm [Ll, D]; w_gate, w_up [Ll, D, F]; w_down [Ll, F, D]
  Qwen3.5-MoE (c.moe) adds to both stacks, L = Lf or Ll (E experts of width I; jaxeval.models.moe):
           router [L, D, E]; moe_gate, moe_up [L, E, D, I]; moe_down [L, E, I, D]; shared_router [L, D];
           w_gate, w_up, w_down are then its shared expert (F = shared_expert_intermediate_size).

Scan: the layer pattern repeats with the smallest period p that divides the depth (Qwen3.5: three
linear layers and one full, p = 4), so the decoder scans L / p groups of p unrolled layers: compile
time grows with the period, never with depth (a pattern that does not repeat is one group).
"""

from __future__ import annotations

import dataclasses
import functools

from jaxeval.models.config import ModelConfig
from jaxeval.models.families import FULL, LINEAR
from jaxeval.models.mesh import MeshError


# Contraction dims (after the layer axis) of each matmul weight of the two stacks, for weight-only
# quantization (jaxeval.models.quant); the full layers' other weights are the decoder's table's.
HYBRID_MATMULS = {
    "layers": {"wq_gate": 1},
    "linear_layers": {"wq": 1, "wk": 1, "wv": 1, "wz": 1, "wb": 1, "wa": 1, "wo": 2, "w_gate": 1, "w_up": 1,
                      "w_down": 1},
}


def is_hybrid(c: ModelConfig) -> bool:
    return c.linear_attention is not None


@dataclasses.dataclass(frozen=True)
class LayerGroups:
    pattern: tuple[str, ...]  # layer kinds of one group, FULL or LINEAR
    groups: int  # G: the scan's length; the model has G * len(pattern) layers
    full_per_group: int  # nf
    linear_per_group: int  # nl

    @property
    def full_layers(self) -> int:  # Lf
        return self.groups * self.full_per_group

    @property
    def linear_layers(self) -> int:  # Ll
        return self.groups * self.linear_per_group


@functools.lru_cache(maxsize=64)
def layer_groups(layer_types: tuple[str, ...]) -> LayerGroups:
    """The smallest period of the layer pattern that divides the depth, as scan groups."""
    n = len(layer_types)
    period = next(p for p in range(1, n + 1) if n % p == 0 and layer_types == layer_types[:p] * (n // p))
    pattern = layer_types[:period]
    full = sum(t == FULL for t in pattern)
    return LayerGroups(pattern, n // period, full, period - full)


def full_layer_indices(c: ModelConfig) -> list[int]:
    return [i for i, t in enumerate(c.layer_types) if t == FULL]


def linear_layer_indices(c: ModelConfig) -> list[int]:
    return [i for i, t in enumerate(c.layer_types) if t == LINEAR]


def hybrid_param_shapes(c: ModelConfig) -> dict:
    """Nested dict of shapes (see the module docstring)."""
    g = layer_groups(c.layer_types)
    Lf, Ll = g.full_layers, g.linear_layers
    D, H, KV, hd, F, V = c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size, c.vocab_size
    d = c.linear_attention
    Hk, Hv, dk, dv, K = d.num_k_heads, d.num_v_heads, d.head_k_dim, d.head_v_dim, d.conv_kernel

    def block(L):  # the pre norms and the MLP every layer has (a MoE's: its shared expert, and the experts)
        out = {"attn_norm": (L, D), "mlp_norm": (L, D), "w_gate": (L, D, F), "w_up": (L, D, F), "w_down": (L, F, D)}
        if c.moe is not None:
            E, I = c.moe.num_experts, c.moe_intermediate_size
            out |= {"router": (L, D, E), "moe_gate": (L, E, D, I), "moe_up": (L, E, D, I), "moe_down": (L, E, I, D),
                    "shared_router": (L, D)}
        return out

    full = {"wq": (Lf, D, H, hd), "wq_gate": (Lf, D, H, hd), "wk": (Lf, D, KV, hd), "wv": (Lf, D, KV, hd),
            "wo": (Lf, H, hd, D), "q_norm": (Lf, hd), "k_norm": (Lf, hd), **block(Lf)}
    linear = {"wq": (Ll, D, Hk, dk), "wk": (Ll, D, Hk, dk), "wv": (Ll, D, Hv, dv), "wz": (Ll, D, Hv, dv),
              "wb": (Ll, D, Hv), "wa": (Ll, D, Hv), "conv_q": (Ll, K, Hk, dk), "conv_k": (Ll, K, Hk, dk),
              "conv_v": (Ll, K, Hv, dv), "a_log": (Ll, Hv), "dt_bias": (Ll, Hv), "norm": (Ll, dv),
              "wo": (Ll, Hv, dv, D), **block(Ll)}
    shapes = {"embed": (V, D), "final_norm": (D,), "layers": full, "linear_layers": linear}
    if not c.tie_word_embeddings:
        shapes["lm_head"] = (D, V)
    return shapes


# Logical axes (jaxeval.models.sharding.RULES) of each parameter, per stack: heads and GDN heads over
# `tensor`, the MLP's and the experts' width over `tensor`, embed over `fsdp`.
_BLOCK_AXES = {"attn_norm": ("layers", "norm"), "mlp_norm": ("layers", "norm"), "w_gate": ("layers", "embed", "mlp"),
               "w_up": ("layers", "embed", "mlp"), "w_down": ("layers", "mlp", "embed"),
               "router": ("layers", "embed", "experts"), "moe_gate": ("layers", "experts", "embed", "moe_mlp"),
               "moe_up": ("layers", "experts", "embed", "moe_mlp"),
               "moe_down": ("layers", "experts", "moe_mlp", "embed"),
               "shared_router": ("layers", "embed")}
_FULL_AXES = {"wq": ("layers", "embed", "heads", "head_dim"), "wq_gate": ("layers", "embed", "heads", "head_dim"),
              "wk": ("layers", "embed", "kv_heads", "head_dim"), "wv": ("layers", "embed", "kv_heads", "head_dim"),
              "wo": ("layers", "heads", "head_dim", "embed"), "q_norm": ("layers", "head_dim"),
              "k_norm": ("layers", "head_dim"), **_BLOCK_AXES}
_LINEAR_AXES = {"wq": ("layers", "embed", "gdn_k_heads", "head_dim"),
                "wk": ("layers", "embed", "gdn_k_heads", "head_dim"),
                "wv": ("layers", "embed", "gdn_v_heads", "head_dim"),
                "wz": ("layers", "embed", "gdn_v_heads", "head_dim"),
                "wb": ("layers", "embed", "gdn_v_heads"), "wa": ("layers", "embed", "gdn_v_heads"),
                "conv_q": ("layers", "conv_taps", "gdn_k_heads", "head_dim"),
                "conv_k": ("layers", "conv_taps", "gdn_k_heads", "head_dim"),
                "conv_v": ("layers", "conv_taps", "gdn_v_heads", "head_dim"), "a_log": ("layers", "gdn_v_heads"),
                "dt_bias": ("layers", "gdn_v_heads"), "norm": ("layers", "head_dim"),
                "wo": ("layers", "gdn_v_heads", "head_dim", "embed"), **_BLOCK_AXES}
# The cache (jaxeval.models.hybrid.HybridCache): K/V [Lf, B, S, KV, hd] kept whole along the sequence;
# GDN states conv_q, conv_k [Ll, B, K-1, Hk, dk], conv_v [Ll, B, K-1, Hv, dv], recurrent [Ll, B, Hv, dk, dv].
KV_CACHE_AXES = ("layers", "cache_batch", "decode_sequence", "cache_kv_heads", "head_dim")
CONV_K_AXES = ("layers", "cache_batch", "conv_taps", "gdn_k_heads", "head_dim")
CONV_V_AXES = ("layers", "cache_batch", "conv_taps", "gdn_v_heads", "head_dim")
RECURRENT_AXES = ("layers", "cache_batch", "gdn_v_heads", "head_dim", "head_dim")


def hybrid_param_axes(c: ModelConfig) -> dict:
    """Nested dict of logical axes, matching hybrid_param_shapes(c)."""
    shapes = hybrid_param_shapes(c)
    top = {"embed": ("vocab", "embed"), "final_norm": ("norm",), "lm_head": ("embed", "vocab")}
    return {**{k: top[k] for k in shapes if k in top}, "layers": {k: _FULL_AXES[k] for k in shapes["layers"]},
            "linear_layers": {k: _LINEAR_AXES[k] for k in shapes["linear_layers"]}}


def check_hybrid_mesh(c: ModelConfig, mesh) -> None:
    """Hybrids shard over data, fsdp and tensor (heads, GDN heads, MLP and expert widths), never over context:
    a Gated DeltaNet layer's state runs through the sequence in order, so a chunk's tokens cannot be split."""
    if not is_hybrid(c) or mesh is None:
        return
    context = int(mesh.shape["context"]) if "context" in mesh.shape else 1
    if context > 1:
        raise MeshError(f"model_type={c.model_type!r} (Gated DeltaNet layers) does not run context-parallel: "
                        f"its recurrent state runs through the sequence in order; use a mesh with context=1 "
                        f"(data, fsdp, tensor), not context={context}")
