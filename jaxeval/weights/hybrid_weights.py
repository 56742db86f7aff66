"""Hugging Face Qwen3.5 tensors -> the hybrid layout (jaxeval.models.hybrid_layout), numpy only.

Qwen3_5ForCausalLM keeps the text model under `model.`, Qwen3_5ForConditionalGeneration under
`model.language_model.` (its `model.visual.` tower and `mtp.` layers are not read). Layer i's
tensors are `layers.{i}.self_attn.*` (full attention) or `layers.{i}.linear_attn.*` (Gated DeltaNet),
plus its norms and MLP. q_proj emits, per head, the query (hd rows) then the output gate (hd rows).
Qwen3.5-MoE's MLP is `mlp.gate.weight` (router), `mlp.shared_expert.*` and `mlp.shared_expert_gate.weight`,
and the experts either one tensor per expert (`mlp.experts.{e}.gate_proj.weight`, what transformers'
save_pretrained writes) or fused (`mlp.experts.gate_up_proj` [E, 2I, D], `mlp.experts.down_proj` [E, D, I],
its module layout, jaxeval.models.moe.params_from_hf).
"""

from __future__ import annotations

import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.models import gated_delta as gd
from jaxeval.models import moe
from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import full_layer_indices, hybrid_param_shapes, linear_layer_indices

_PREFIXES = ("model.language_model.", "model.")
_BLOCK = {"attn_norm": "input_layernorm.weight", "mlp_norm": "post_attention_layernorm.weight",
          "w_gate": "mlp.gate_proj.weight", "w_up": "mlp.up_proj.weight", "w_down": "mlp.down_proj.weight"}


def load_hybrid_params(st, c: ModelConfig, dtype) -> dict:
    """st: a source of HF-named tensors (`name in st`, `st.get(name)`, `st.folder`) -> nested dict of numpy
    arrays in `dtype`, every shape checked against config.json."""
    prefix = next((p for p in _PREFIXES if f"{p}embed_tokens.weight" in st), None)
    if prefix is None:
        raise CheckpointError(f"{st.folder}: no embed_tokens.weight tensor under any known prefix "
                              f"({', '.join(_PREFIXES)})")
    shapes = hybrid_param_shapes(c)
    dims = c.linear_attention
    D, H, hd = c.hidden_size, c.num_heads, c.head_dim

    def fetch(name, shape):
        if name not in st:
            raise CheckpointError(f"{st.folder}: tensor {name!r} is missing")
        w = np.asarray(st.get(name))
        if tuple(w.shape) != tuple(shape):
            raise CheckpointError(f"{st.folder}: tensor {name!r} has shape {list(w.shape)}, config.json implies "
                                  f"{list(shape)}")
        return w

    F, KV, d = c.intermediate_size, c.num_kv_heads, dims
    conv = 2 * d.num_k_heads * d.head_k_dim + d.num_v_heads * d.head_v_dim
    block_shapes = {"attn_norm": (D,), "mlp_norm": (D,), "w_gate": (F, D), "w_up": (F, D), "w_down": (D, F)}
    gdn_shapes = {"in_proj_qkv.weight": (conv, D), "in_proj_z.weight": (d.num_v_heads * d.head_v_dim, D),
                  "in_proj_b.weight": (d.num_v_heads, D), "in_proj_a.weight": (d.num_v_heads, D),
                  "conv1d.weight": (conv, 1, d.conv_kernel), "A_log": (d.num_v_heads,), "dt_bias": (d.num_v_heads,),
                  "norm.weight": (d.head_v_dim,), "out_proj.weight": (D, d.num_v_heads * d.head_v_dim)}

    def block(i):  # ours [in, out] from HF [out, in]
        names = [n for n in _BLOCK if c.moe is None or not n.startswith("w_")]  # a MoE's MLP: experts()
        out = {ours: fetch(f"{prefix}layers.{i}.{_BLOCK[ours]}", block_shapes[ours]) for ours in names}
        out = {name: w.T if name.startswith("w_") else w for name, w in out.items()}
        return out if c.moe is None else {**out, **experts(f"{prefix}layers.{i}.mlp.")}

    def experts(p):
        E, I = c.moe.num_experts, c.moe_intermediate_size
        sd = {"gate.weight": fetch(p + "gate.weight", (E, D)),
              "shared_expert_gate.weight": fetch(p + "shared_expert_gate.weight", (1, D))}
        if f"{p}experts.gate_up_proj" in st:
            sd |= {"experts.gate_up_proj": fetch(p + "experts.gate_up_proj", (E, 2 * I, D)),
                   "experts.down_proj": fetch(p + "experts.down_proj", (E, D, I))}
        else:  # one tensor per expert: stacked into the fused layout
            each = lambda name, shape: np.stack([fetch(f"{p}experts.{e}.{name}.weight", shape) for e in range(E)])
            sd |= {"experts.gate_up_proj": np.concatenate([each("gate_proj", (I, D)), each("up_proj", (I, D))], 1),
                   "experts.down_proj": each("down_proj", (D, I))}
        sd |= {f"shared_expert.{hf}.weight": fetch(f"{p}shared_expert.{hf}.weight", block_shapes[name])
               for hf, name in (("gate_proj", "w_gate"), ("up_proj", "w_up"), ("down_proj", "w_down"))}
        ours = moe.params_from_hf(sd, c.moe)  # the shared expert is the layer's w_gate, w_up, w_down
        return {"router": ours["router"], "moe_gate": ours["w_gate"], "moe_up": ours["w_up"],
                "moe_down": ours["w_down"], "shared_router": ours["shared_router"], "w_gate": ours["shared_gate"],
                "w_up": ours["shared_up"], "w_down": ours["shared_down"]}

    def full(i):
        p = f"{prefix}layers.{i}.self_attn."
        q = fetch(p + "q_proj.weight", (H * 2 * hd, D)).T.reshape(D, H, 2, hd)
        return {"wq": q[:, :, 0], "wq_gate": q[:, :, 1], "wk": fetch(p + "k_proj.weight", (KV * hd, D)).T.reshape(D, KV, hd),
                "wv": fetch(p + "v_proj.weight", (KV * hd, D)).T.reshape(D, KV, hd),
                "wo": fetch(p + "o_proj.weight", (D, H * hd)).T.reshape(H, hd, D),
                "q_norm": fetch(p + "q_norm.weight", (hd,)), "k_norm": fetch(p + "k_norm.weight", (hd,)), **block(i)}

    def linear(i):
        p = f"{prefix}layers.{i}.linear_attn."
        return {**gd.params_from_hf_qwen3_5({name: fetch(p + name, shape) for name, shape in gdn_shapes.items()}, dims),
                **block(i)}

    def stacked(layers, expected: dict) -> dict:
        return {name: np.stack([layer[name] for layer in layers]).astype(dtype) if layers else np.zeros(shape, dtype)
                for name, shape in expected.items()}

    params = {"embed": fetch(f"{prefix}embed_tokens.weight", shapes["embed"]).astype(dtype),
              "final_norm": fetch(f"{prefix}norm.weight", shapes["final_norm"]).astype(dtype),
              "layers": stacked([full(i) for i in full_layer_indices(c)], shapes["layers"]),
              "linear_layers": stacked([linear(i) for i in linear_layer_indices(c)], shapes["linear_layers"])}
    if "lm_head" in shapes:
        params["lm_head"] = fetch("lm_head.weight", shapes["embed"]).T.astype(dtype)
    return params
