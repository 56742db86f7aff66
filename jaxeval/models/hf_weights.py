"""Map Hugging Face tensor names and layouts onto jaxeval's stacked parameters.

The names and layouts come from the one parameter table (jaxeval.models.param_layout). Fused HF
projections (Phi-3's qkv_proj, Phi-3's and GLM's gate_up_proj) are split by rows at load: each of our
tensors is a view of its rows, so a shard still reads only its own bytes.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.models.hybrid_weights import load_hybrid_params
from jaxeval.models.param_layout import TOP, fused_rows, hf_name, hf_shape, param, param_shapes, to_ours
from jaxeval.models.safetensors_io import SafetensorsFolder

# Text-model prefixes, tried in order (multimodal Gemma 3 keeps its text tower under language_model).
_PREFIXES = ("model.", "model.language_model.", "language_model.model.", "")


def text_prefix(st: SafetensorsFolder) -> str:
    """The prefix of the text model's tensor names in st (model., model.language_model., ...)."""
    for prefix in _PREFIXES:
        if f"{prefix}{TOP['embed'].hf}" in st:
            return prefix
    raise CheckpointError(f"{st.folder}: no embed_tokens.weight tensor under any known prefix "
                          f"({', '.join(p or '(none)' for p in _PREFIXES)})")


def load_hf_params(folder, c: ModelConfig, dtype, shardings: dict | None = None, tensors=None,
                   exclude: frozenset[str] = frozenset()) -> dict:
    """Read a HF safetensors folder into our nested dict of arrays, cast to `dtype`.

    tensors: another source of HF-named tensors (`name in tensors`, `tensors.get(name)`, `.folder`),
    e.g. jaxeval.models.gguf_weights.GGUFCheckpoint; default: the folder's safetensors files.
    exclude: parameter names not to read (lm_head, layer parameters: a caller holds them otherwise).

    Without shardings: numpy arrays. With shardings (a nested dict of NamedSharding matching
    param_shapes, e.g. jaxeval.models.sharding.param_shardings): global jax arrays built shard by
    shard, each process reading only the bytes of the slices its own devices hold (the files are
    memory-mapped; our layout is a view of the HF one, so a slice touches only its own rows).
    """
    st = SafetensorsFolder(folder) if tensors is None else tensors
    if is_hybrid(c):  # Qwen3.5: its own names and stacks, read whole on the host, then placed shard by shard
        params = load_hybrid_params(st, c, dtype)
        if shardings is None:
            return params
        return jax.tree.map(lambda a, t: jax.make_array_from_callback(a.shape, t, lambda index: a[index]), params,
                            shardings)
    prefix = text_prefix(st)
    shapes = param_shapes(c)
    shapes = {name: shape for name, shape in shapes.items() if name not in exclude}
    shapes["layers"] = {name: shape for name, shape in shapes["layers"].items() if name not in exclude}

    def fetch(tensor: str, expected: tuple[int, ...]) -> np.ndarray:
        w = st.get(tensor)
        if tuple(w.shape) != tuple(expected):
            raise CheckpointError(f"{st.folder}: tensor {tensor!r} has shape {list(w.shape)}, "
                                  f"config.json implies {list(expected)}")
        return w

    views = {name: fetch(f"{prefix}{hf_name(name, c)}", shapes[name]) for name in ("embed", "final_norm")}
    if "lm_head" in shapes:
        head = TOP["lm_head"].hf  # beside the text model, not under its prefix
        head_name = head if head in st else prefix.replace("model.", "", 1) + head
        views["lm_head"] = to_ours("lm_head", fetch(head_name, hf_shape("lm_head", shapes["lm_head"])),
                                   shapes["lm_head"])

    def layer_view(name, i, shape):
        """Layer i's tensor `name` in our layout: a view of the memory-mapped file (rows of it, if fused)."""
        expected, fused, where = hf_shape(name, shape), fused_rows(name, c), f"{prefix}layers.{i}.{hf_name(name, c)}"
        if param(name).hf_layout == "experts":  # one tensor per expert, stacked
            return to_ours(name, np.stack([fetch(where.format(j), expected) for j in range(shape[0])]), shape)
        if fused is None:
            return to_ours(name, fetch(where, expected), shape)
        total, rows = fused
        return to_ours(name, fetch(where, (total, *expected[1:]))[rows], shape)

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
