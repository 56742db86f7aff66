"""Map Hugging Face tensor names and layouts onto jaxeval's stacked parameters.

The names and layouts come from the one parameter table (jaxeval.models.param_layout). Fused HF
projections (Phi-3's qkv_proj, Phi-3's and GLM's gate_up_proj) are split by rows at load: each of our
tensors is a view of its rows, so a shard still reads only its own bytes. gpt-oss's experts.gate_up_proj
(and its bias) interleave gate and up along the last axis: each is a strided view of it.
MXFP4 expert tensors (the hub's gpt-oss files: <name>_blocks, <name>_scales in place of <name>) are
dequantized as they load (jaxeval.weights.mxfp4.MXFP4Tensor: bfloat16, exact), each shard from its own bytes.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.weights import mxfp4
from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.weights.hybrid_weights import load_hybrid_params
from jaxeval.models.layer_stacks import layer_stacks
from jaxeval.models.param_layout import (TOP, fused_columns, fused_rows, hf_layout, hf_name, hf_shape, param_shapes,
                                         to_ours)
from jaxeval.weights.safetensors_io import SafetensorsFolder

# Text-model prefixes, tried in order (multimodal Gemma 3 keeps its text tower under language_model).
_PREFIXES = ("model.", "model.language_model.", "language_model.model.", "")


def text_prefix(st: SafetensorsFolder) -> str:
    """The prefix of the text model's tensor names in st (model., model.language_model., ...)."""
    for prefix in _PREFIXES:
        if f"{prefix}{TOP['embed'].hf}" in st:
            return prefix
    raise CheckpointError(f"{st.folder}: no embed_tokens.weight tensor under any known prefix "
                          f"({', '.join(p or '(none)' for p in _PREFIXES)})")


def _mxfp4(st, tensor: str) -> mxfp4.MXFP4Tensor:
    """The float [E, in, out] tensor held as MXFP4 <tensor>_blocks and <tensor>_scales (read lazily)."""
    blocks, scales = st.get(f"{tensor}_blocks"), st.get(f"{tensor}_scales")
    try:
        return mxfp4.MXFP4Tensor(blocks, scales)
    except ValueError as e:
        raise CheckpointError(f"{st.folder}: tensor {tensor!r}: {e}") from None


def load_hf_params(folder, c: ModelConfig, dtype, shardings: dict | None = None, tensors=None,
                   exclude: frozenset[str] = frozenset()) -> dict:
    """Read a HF safetensors folder into our nested dict of arrays, cast to `dtype`.

    tensors: another source of HF-named tensors (`name in tensors`, `tensors.get(name)`, `.folder`),
    e.g. jaxeval.weights.gguf_weights.GGUFCheckpoint; default: the folder's safetensors files.
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
    stacks = layer_stacks(c)  # "layers", and "dense_layers" for the model's first layers where it has two stacks
    for stack in stacks:
        shapes[stack.name] = {name: shape for name, shape in shapes[stack.name].items() if name not in exclude}

    def fetch(tensor: str, expected: tuple[int, ...]) -> np.ndarray:
        w = _mxfp4(st, tensor) if tensor not in st and f"{tensor}_blocks" in st else st.get(tensor)
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
        expected, fused, where = hf_shape(name, shape, c), fused_rows(name, c), f"{prefix}layers.{i}.{hf_name(name, c)}"
        if hf_layout(name, c) == "experts":  # one tensor per expert, stacked
            return to_ours(name, np.stack([fetch(where.format(j), expected) for j in range(shape[0])]), shape, c)
        columns = fused_columns(name, c)
        if columns is not None:  # interleaved along the last axis
            parts, index = columns
            return to_ours(name, fetch(where, (*expected[:-1], parts * expected[-1]))[..., index::parts], shape, c)
        if fused is None:
            return to_ours(name, fetch(where, expected), shape, c)
        total, rows = fused
        return to_ours(name, fetch(where, (total, *expected[1:]))[rows], shape, c)

    layer_views = {stack.name: {name: [layer_view(name, stack.first + i, shape[1:]) for i in range(stack.count)]
                                for name, shape in shapes[stack.name].items()}
                   for stack in stacks}  # per stack and layer: views of the memory-mapped files

    def top_block(name):
        return lambda index: np.asarray(views[name][tuple(index)], dtype=dtype)

    def layer_block(stack, name):
        def block(index):
            index = tuple(index)
            views = layer_views[stack.name][name]
            layers = range(stack.count)[index[0]]
            first = views[layers[0]][index[1:]]
            out = np.empty((len(layers), *first.shape), dtype=dtype)  # filled layer by layer: one copy at a time
            for row, i in enumerate(layers):
                out[row] = views[i][index[1:]]
            return out
        return block

    blocks = {name: (shapes[name], top_block(name)) for name in views}
    for stack in stacks:
        blocks[stack.name] = {name: (shape, layer_block(stack, name)) for name, shape in shapes[stack.name].items()}

    def build(shape, block, target):
        if target is None:
            return block(tuple(slice(None) for _ in shape))
        return jax.make_array_from_callback(shape, target, block)

    targets = shardings or {}
    params = {name: build(*blocks[name], targets.get(name)) for name in views}
    for stack in stacks:
        params[stack.name] = {name: build(*blocks[stack.name][name], targets.get(stack.name, {}).get(name))
                              for name in shapes[stack.name]}
    return params
