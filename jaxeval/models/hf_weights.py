"""Map Hugging Face tensor names and layouts onto jaxeval's stacked parameters.

HF linear weights are [out, in]; ours are [in, ...heads...] so the einsums read naturally. Fused HF
projections (Phi-3's qkv_proj, Phi-3's and GLM's gate_up_proj) are split by rows at load: each of our
tensors is a view of its rows, so a shard still reads only its own bytes.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.models.decoder import param_shapes
from jaxeval.models.safetensors_io import SafetensorsFolder

# Text-model prefixes, tried in order (multimodal Gemma 3 keeps its text tower under language_model).
_PREFIXES = ("model.", "model.language_model.", "language_model.model.", "")


_GEMMA_NORMS = {"post_attn_norm": "post_attention_layernorm.weight", "mlp_norm": "pre_feedforward_layernorm.weight",
                "post_mlp_norm": "post_feedforward_layernorm.weight"}
_OLMO_NORMS = {"post_attn_norm": "post_attention_layernorm.weight", "post_mlp_norm": "post_feedforward_layernorm.weight",
               "q_norm_heads": "self_attn.q_norm.weight", "k_norm_heads": "self_attn.k_norm.weight"}
# Where each family's norms sit: the same HF name means a different norm from one family to the next
# (post_attention_layernorm feeds the MLP in Llama and GLM-4, follows attention in Gemma and OLMo 2).
_FAMILY_NAMES = {
    "gemma2": _GEMMA_NORMS, "gemma3_text": _GEMMA_NORMS, "olmo2": _OLMO_NORMS, "olmo3": _OLMO_NORMS,
    "glm4": {"post_attn_norm": "post_self_attn_layernorm.weight", "post_mlp_norm": "post_mlp_layernorm.weight"},
    "exaone4": {"post_attn_norm": "post_attention_layernorm.weight", "post_mlp_norm": "post_feedforward_layernorm.weight"},
}
_FUSED_QKV = ("phi3",)  # self_attn.qkv_proj: rows [q (H*hd); k (KV*hd); v (KV*hd)]
_FUSED_GATE_UP = ("phi3", "glm", "glm4")  # mlp.gate_up_proj: rows [gate (F); up (F)]


def _layer_names(c: ModelConfig) -> dict[str, str]:
    """Our per-layer name -> HF name inside `layers.{i}.`."""
    names = {"wq": "self_attn.q_proj.weight", "wk": "self_attn.k_proj.weight", "wv": "self_attn.v_proj.weight",
             "wo": "self_attn.o_proj.weight", "w_gate": "mlp.gate_proj.weight", "w_up": "mlp.up_proj.weight",
             "w_down": "mlp.down_proj.weight", "attn_norm": "input_layernorm.weight",
             "mlp_norm": "post_attention_layernorm.weight",
             "bq": "self_attn.q_proj.bias", "bk": "self_attn.k_proj.bias", "bv": "self_attn.v_proj.bias",
             "q_norm": "self_attn.q_norm.weight", "k_norm": "self_attn.k_norm.weight"}
    names |= _FAMILY_NAMES.get(c.model_type, {})
    if c.model_type in _FUSED_QKV:
        names |= dict.fromkeys(("wq", "wk", "wv"), "self_attn.qkv_proj.weight")
    if c.model_type in _FUSED_GATE_UP:
        names |= dict.fromkeys(("w_gate", "w_up"), "mlp.gate_up_proj.weight")
    return names


def _fused_rows(name: str, c: ModelConfig) -> tuple[int, slice] | None:
    """(rows of the whole fused HF tensor, our tensor's rows in it), or None if `name` is not fused."""
    q, kv, f = c.num_heads * c.head_dim, c.num_kv_heads * c.head_dim, c.intermediate_size
    if c.model_type in _FUSED_QKV and name in ("wq", "wk", "wv"):
        return q + 2 * kv, {"wq": slice(0, q), "wk": slice(q, q + kv), "wv": slice(q + kv, q + 2 * kv)}[name]
    if c.model_type in _FUSED_GATE_UP and name in ("w_gate", "w_up"):
        return 2 * f, {"w_gate": slice(0, f), "w_up": slice(f, 2 * f)}[name]
    return None


def _to_ours(name: str, w: np.ndarray, c: ModelConfig) -> np.ndarray:
    """One layer's HF tensor -> our layout."""
    D, H, KV, hd = c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim
    if name == "wq":
        return w.T.reshape(D, H, hd)
    if name in ("wk", "wv"):
        return w.T.reshape(D, KV, hd)
    if name == "wo":
        return w.T.reshape(H, hd, D)
    if name in ("w_gate", "w_up", "w_down"):
        return w.T
    if name == "bq":
        return w.reshape(H, hd)
    if name in ("bk", "bv"):
        return w.reshape(KV, hd)
    if name == "q_norm_heads":
        return w.reshape(H, hd)
    if name == "k_norm_heads":
        return w.reshape(KV, hd)
    return w


def _hf_shape(name: str, ours: tuple[int, ...]) -> tuple[int, ...]:
    """The HF shape a per-layer tensor must have, from our per-layer shape."""
    if name in ("wq", "wk", "wv"):
        return (ours[1] * ours[2], ours[0])
    if name == "wo":
        return (ours[2], ours[0] * ours[1])
    if name in ("w_gate", "w_up", "w_down"):
        return (ours[1], ours[0])
    if name in ("bq", "bk", "bv", "q_norm_heads", "k_norm_heads"):
        return (ours[0] * ours[1],)
    return ours


def _prefix(st: SafetensorsFolder) -> str:
    for prefix in _PREFIXES:
        if f"{prefix}embed_tokens.weight" in st:
            return prefix
    raise CheckpointError(f"{st.folder}: no embed_tokens.weight tensor under any known prefix "
                          f"({', '.join(p or '(none)' for p in _PREFIXES)})")


def load_hf_params(folder, c: ModelConfig, dtype, shardings: dict | None = None, tensors=None) -> dict:
    """Read a HF safetensors folder into our nested dict of arrays, cast to `dtype`.

    tensors: another source of HF-named tensors (`name in tensors`, `tensors.get(name)`, `.folder`),
    e.g. jaxeval.models.gguf_weights.GGUFCheckpoint; default: the folder's safetensors files.

    Without shardings: numpy arrays. With shardings (a nested dict of NamedSharding matching
    param_shapes, e.g. jaxeval.models.sharding.param_shardings): global jax arrays built shard by
    shard, each process reading only the bytes of the slices its own devices hold (the files are
    memory-mapped; our layout is a view of the HF one, so a slice touches only its own rows).
    """
    st = SafetensorsFolder(folder) if tensors is None else tensors
    prefix = _prefix(st)
    shapes = param_shapes(c)

    def fetch(hf_name: str, expected: tuple[int, ...]) -> np.ndarray:
        w = st.get(hf_name)
        if tuple(w.shape) != tuple(expected):
            raise CheckpointError(f"{st.folder}: tensor {hf_name!r} has shape {list(w.shape)}, "
                                  f"config.json implies {list(expected)}")
        return w

    views = {"embed": fetch(f"{prefix}embed_tokens.weight", shapes["embed"]),
             "final_norm": fetch(f"{prefix}norm.weight", shapes["final_norm"])}
    if "lm_head" in shapes:
        head_name = "lm_head.weight" if "lm_head.weight" in st else prefix.replace("model.", "", 1) + "lm_head.weight"
        V, D = shapes["embed"]
        views["lm_head"] = fetch(head_name, (V, D)).T
    hf_names = _layer_names(c)

    def layer_view(name, i, shape):
        """Layer i's tensor `name` in our layout: a view of the memory-mapped file (rows of it, if fused)."""
        expected, fused = _hf_shape(name, shape), _fused_rows(name, c)
        if fused is None:
            return _to_ours(name, fetch(f"{prefix}layers.{i}.{hf_names[name]}", expected), c)
        total, rows = fused
        return _to_ours(name, fetch(f"{prefix}layers.{i}.{hf_names[name]}", (total, *expected[1:]))[rows], c)

    layer_views = {name: [layer_view(name, i, shape[1:]) for i in range(c.num_layers)]
                   for name, shape in shapes["layers"].items()}  # per layer: views of the memory-mapped files

    def top_block(name):
        return lambda index: np.asarray(views[name][tuple(index)], dtype=dtype)

    def layer_block(name):
        def block(index):
            index = tuple(index)
            layers = range(c.num_layers)[index[0]]
            first = layer_views[name][layers[0]][index[1:]]
            out = np.empty((len(layers), *first.shape), dtype=dtype)  # filled layer by layer: one copy at a time
            for row, i in enumerate(layers):
                out[row] = layer_views[name][i][index[1:]]
            return out
        return block

    blocks = {name: (shapes[name], top_block(name)) for name in views}
    blocks["layers"] = {name: (shape, layer_block(name)) for name, shape in shapes["layers"].items()}

    def build(shape, block, target):
        if target is None:
            return block(tuple(slice(None) for _ in shape))
        return jax.make_array_from_callback(shape, target, block)

    targets = shardings or {}
    params = {name: build(*blocks[name], targets.get(name)) for name in views}
    params["layers"] = {name: build(*blocks["layers"][name], targets.get("layers", {}).get(name))
                        for name in shapes["layers"]}
    return params
