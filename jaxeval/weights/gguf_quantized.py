"""A GGUF checkpoint's matmul weights kept in their block codes on the device (jaxeval.models.quant.Quantized).

Each linear parameter's per-layer tensors (jaxeval.weights.gguf_codes: codes, scales, offsets in
Hugging Face's [out, in] layout) are put in our layout (codes [*in, *out], scales [G, *out]) and
stacked over layers. Quantizers mix block types within one parameter (Q4_K_M writes some layers'
ffn_down as Q6_K, others as Q4_K), so the stack takes the smallest group of its layers (scales
repeated for the larger ones), an offset if any layer has one (zeros elsewhere: adding 0 changes no
bit) and 4-bit packing when every layer's codes fit in 16 values, int8 codes otherwise.
A parameter any of whose layers is stored as float (F32/F16/BF16) is left to the float path.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxeval.models.config import ModelConfig
from jaxeval.weights.gguf_codes import Codes
from jaxeval.models.param_layout import TOP, hf_name, param_shapes
from jaxeval.models.quant import Quantized, layer_matmuls, pack_int4

LABEL = "gguf-blocks"  # Model.quantization of a GGUF model whose weights stay in block codes


def _ours(codes: Codes, ours: tuple[int, ...], n_in: int) -> dict:
    """One layer's Codes ([out, in]) in our layout: codes [*in, *out], scale/offset [G, *out]."""
    out_shape = ours[n_in:]
    regroup = lambda a: None if a is None else a.T.reshape((a.shape[1],) + out_shape)  # noqa: E731
    return {"codes": codes.codes.T.reshape(ours), "scale": regroup(codes.scale), "offset": regroup(codes.offset),
            "group": codes.group, "range": codes.code_range}


def _stack(layers: list[dict], in_shape: tuple[int, ...]) -> Quantized:
    group = min(layer["group"] for layer in layers)
    lo = min(layer["range"][0] for layer in layers)
    hi = max(layer["range"][1] for layer in layers)
    with_offset = any(layer["offset"] is not None for layer in layers)
    n_in = math.prod(in_shape)
    qs, scales, offsets = [], [], []
    for layer in layers:
        repeat = layer["group"] // group
        scales.append(np.repeat(layer["scale"], repeat, axis=0))
        if with_offset:
            offset = layer["offset"] if layer["offset"] is not None else np.zeros_like(layer["scale"])
            offsets.append(np.repeat(offset, repeat, axis=0))
        codes = layer["codes"]
        if hi - lo < 16:
            codes = pack_int4((codes.reshape((n_in,) + codes.shape[len(in_shape):]).astype(np.int16) - lo))
        qs.append(codes)
    packed = hi - lo < 16
    return Quantized(np.stack(qs), np.stack(scales), None, "int4" if packed else "int8", in_shape,
                     offset=np.stack(offsets) if with_offset else None, shift=-lo if packed else 0)


def quantized_gguf_params(checkpoint, c: ModelConfig) -> dict:
    """{"layers": {name: Quantized}, "lm_head": Quantized} for every linear parameter stored block-quantized."""
    shapes = param_shapes(c)
    out: dict = {"layers": {}}
    for name, in_shape, out_shape in layer_matmuls(shapes["layers"]):
        per_layer = [checkpoint.codes(f"model.layers.{i}.{hf_name(name, c)}") for i in range(c.num_layers)]
        if all(codes is not None for codes in per_layer):
            out["layers"][name] = _stack([_ours(codes, in_shape + out_shape, len(in_shape)) for codes in per_layer],
                                         in_shape)
    if "lm_head" in shapes and TOP["lm_head"].hf in checkpoint:
        codes = checkpoint.codes(TOP["lm_head"].hf)
        if codes is not None:  # one tensor, no layer axis
            head = _stack([_ours(codes, shapes["lm_head"], 1)], shapes["lm_head"][:1])
            out["lm_head"] = dataclasses.replace(head, q=head.q[0], scale=head.scale[0],
                                                 offset=None if head.offset is None else head.offset[0])
    return out


def excluded(quantized: dict) -> set[str]:
    """The parameter names quantized_gguf_params returned (not to be read as float)."""
    return set(quantized["layers"]) | ({"lm_head"} if "lm_head" in quantized else set())
