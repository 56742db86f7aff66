"""Weight-only quantized parameters, dequantized inside the jitted matmuls.

A quantized weight is a `Quantized` pytree: the stored codes, their scales (zero points, offsets)
and, as static data, its kind and the shape of its contraction dims. The device holds the codes;
`dense_weight` rebuilds the weight in the compute dtype where a layer uses it, inside the jitted
step, so XLA fuses the dequantization into the matmul's operand and no full-precision copy of the
model is ever resident.

The contraction dims `in` are the leading dims of a weight (after any stacked layer axis), `out`
the rest: wq [D | H, hd], wo [H, hd | D], w_down [F | D], lm_head [D | V]. Scales, zero points and
offsets are per group of consecutive rows of the flattened contraction dims and per output
element: [G, *out] (G = 1: per output channel). With c the integer code of an element:

    w = (c - zero) * scale + offset      (zero: 0 when absent; offset: 0 when absent)

- int8: codes int8 [*in, *out]. Quantize-on-load: symmetric per channel, c in [-127, 127].
  GGUF Q8_0/Q5_x/Q6_K and the other 5- to 8-bit block formats (jaxeval.weights.gguf_codes).
- int4: codes 0..15 packed two per uint8 along the input rows ([In/2, *out]; row 2i in the low
  nibble, 2i+1 in the high one), c = nibble - shift (static). Quantize-on-load: symmetric per
  group of `group` rows, shift 8; GPTQ/AWQ/compressed-tensors: integer zero points; GGUF Q4_0
  (shift 8), Q4_1 and Q4_K (shift 0, float offsets).
- fp8: float8_e4m3fn codes, scale per output channel ([1, *out]) or per [block_in, block_out]
  tile (DeepSeek-V3 / Qwen3 FP8 checkpoints: 128 x 128).

Round-to-nearest quantize-on-load (`quantize`) is for what-if studies: int8 per channel, int4
symmetric per group (default 128), fp8 per channel. Its error per element is at most half a step:
scale/2 for the integer kinds, 2**-4 relative for e4m3 (3 mantissa bits) within its normal range.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.errors import ConfigError
from jaxeval.models.hybrid_layout import HYBRID_MATMULS
from jaxeval.models.param_layout import LAYERS, TOP

KINDS = ("int8", "int4", "fp8")
INT8_MAX = 127
FP8_MAX = 448.0  # largest finite float8_e4m3fn
INT4_ZERO = 8  # the shift of symmetric int4 codes (nibbles 0..15 hold -8..7)
DEFAULT_GROUP = 128


def contraction_dims(name: str, stack: str = "layers") -> int | None:
    """How many leading dims (after the layer axis) of parameter `name` a matmul contracts; None: not a matmul weight.

    stack: "layers" (the decoder's table, plus a hybrid's attention output gate) or "linear_layers"
    (a hybrid's Gated DeltaNet layers, jaxeval.models.hybrid_layout).
    """
    if stack == "linear_layers" or name in HYBRID_MATMULS["layers"]:
        return HYBRID_MATMULS[stack].get(name)
    p = LAYERS.get(name) or TOP.get(name)
    return p.inputs if p is not None and p.hf_layout == "linear" else None


def layer_matmuls(layer_shapes: dict, stack: str = "layers"):
    """(name, per-layer in_shape, per-layer out_shape) of each matmul weight among stacked layer shapes."""
    for name, shape in layer_shapes.items():
        n_in = contraction_dims(name, stack)
        if n_in:
            yield name, tuple(shape[1:1 + n_in]), tuple(shape[1 + n_in:])


@dataclasses.dataclass(frozen=True)
class Quantized:
    """Codes and scales of one weight (leading axes may stack layers); see the module docstring."""

    q: jax.Array | np.ndarray
    scale: jax.Array | np.ndarray
    zero: jax.Array | np.ndarray | None
    kind: str = dataclasses.field(metadata={"static": True})
    in_shape: tuple[int, ...] = dataclasses.field(metadata={"static": True})  # contraction dims of one layer
    block: tuple[int, int] | None = dataclasses.field(default=None, metadata={"static": True})  # fp8 tiles
    offset: jax.Array | np.ndarray | None = None
    shift: int = dataclasses.field(default=INT4_ZERO, metadata={"static": True})  # int4 nibble -> code


jax.tree_util.register_dataclass(Quantized, data_fields=["q", "scale", "zero", "offset"],
                                 meta_fields=["kind", "in_shape", "block", "shift"])


def is_quantized(w) -> bool:
    return isinstance(w, Quantized)


def dense_weight(w, dtype):
    """The weight a layer multiplies by, in dtype: w itself, or a Quantized one rebuilt (jit-traceable).

    Runs on one layer's slice (inside the scanned layer body) or on an unstacked weight.
    """
    if not isinstance(w, Quantized):
        return w
    n_in = math.prod(w.in_shape)
    if w.kind == "fp8" and w.block is not None:
        q2 = w.q.astype(jnp.float32).reshape(n_in, -1)
        bi, bo = w.block
        scale = jnp.repeat(jnp.repeat(w.scale, bi, axis=0)[:n_in], bo, axis=1)[:, :q2.shape[1]]
        return (q2 * scale).reshape(w.q.shape).astype(dtype)
    if w.kind == "int4":
        out_shape = tuple(w.q.shape[1:])
        codes = unpack_int4(w.q)
    else:
        out_shape = tuple(w.q.shape[len(w.in_shape):])
        codes = w.q.astype(jnp.float32)
    groups = w.scale.shape[0]
    codes = codes.reshape((groups, n_in // groups) + out_shape)
    if w.zero is not None:
        codes = codes - w.zero.astype(jnp.float32)[:, None]
    elif w.kind == "int4" and w.shift:
        codes = codes - jnp.float32(w.shift)
    weight = codes * w.scale.astype(jnp.float32)[:, None]
    if w.offset is not None:
        weight = weight + w.offset.astype(jnp.float32)[:, None]
    return weight.reshape(w.in_shape + out_shape).astype(dtype)


def pack_int4(codes: np.ndarray) -> np.ndarray:
    """codes uint [In, ...] in 0..15, In even -> uint8 [In/2, ...]: row 2i low nibble, 2i+1 high."""
    codes = np.asarray(codes, np.uint8)
    if codes.shape[0] % 2:
        raise ValueError(f"int4 packing needs an even number of input rows, got {codes.shape[0]}")
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)


def unpack_int4(packed):
    """uint8 [In/2, ...] -> float32 codes [In, ...] (jit-traceable)."""
    low = (packed & 0xF).astype(jnp.float32)
    high = (packed >> 4).astype(jnp.float32)
    return jnp.stack([low, high], axis=1).reshape((packed.shape[0] * 2,) + tuple(packed.shape[1:]))


def quantize(w: np.ndarray, kind: str, n_contract: int, group: int = DEFAULT_GROUP) -> Quantized:
    """Round-to-nearest weight-only quantization of one (unstacked) weight w [*in, *out] (float32 on the host).

    n_contract: how many leading dims of w are contracted (contraction_dims); group: int4's rows per scale.
    """
    w = np.asarray(w, np.float32)
    in_shape = tuple(w.shape[:n_contract])
    reduce = tuple(range(n_contract))
    if kind in ("int8", "fp8"):
        top = INT8_MAX if kind == "int8" else FP8_MAX
        scale = _safe(np.abs(w).max(axis=reduce, keepdims=True) / top).astype(np.float32)
        if kind == "int8":
            q = np.clip(np.rint(w / scale), -INT8_MAX, INT8_MAX).astype(np.int8)
        else:
            q = np.asarray(jnp.asarray(w / scale).astype(jnp.float8_e4m3fn))
        return Quantized(q, scale.reshape((1,) + w.shape[n_contract:]), None, kind, in_shape)
    if kind == "int4":
        n_in = math.prod(in_shape)
        if n_in % group or group % 2:
            raise ValueError(f"int4 groups of {group} rows do not divide the {n_in} input rows of a {w.shape} weight")
        flat = w.reshape((n_in // group, group) + w.shape[n_contract:])
        scale = _safe(np.abs(flat).max(axis=1) / (INT4_ZERO - 1)).astype(np.float32)  # codes -7..7 used
        codes = np.clip(np.rint(flat / scale[:, None]), -INT4_ZERO, INT4_ZERO - 1) + INT4_ZERO
        return Quantized(pack_int4(codes.reshape((n_in,) + w.shape[n_contract:])), scale, None, "int4", in_shape)
    raise ValueError(f"quantize={kind!r} is not supported (choose {', '.join(KINDS)})")


def _safe(scale: np.ndarray) -> np.ndarray:
    """Scales of all-zero channels set to 1 (their codes are 0 whatever the scale)."""
    return np.where(scale > 0, scale, 1.0)


def stack(layers: list[Quantized]) -> Quantized:
    """Per-layer Quantized weights -> one with a leading layer axis (what the scanned stack holds)."""
    first = layers[0]
    arrays = {name: (None if getattr(first, name) is None else np.stack([getattr(x, name) for x in layers]))
              for name in ("q", "scale", "zero", "offset")}
    return dataclasses.replace(first, **arrays)


def check_quantize(kind: str | None, group: int) -> str | None:
    """The quantization's label for results and fingerprints ("int8", "int4-g128", "fp8"), None for none."""
    if kind in (None, "", "none"):
        return None
    if kind not in KINDS:
        raise ConfigError(f"quantize={kind!r} is not supported (choose none, {', '.join(KINDS)})")
    if kind == "int4" and (not isinstance(group, int) or group < 2 or group % 2):
        raise ConfigError(f"quant_group={group!r}: int4 needs an even number of rows per group (e.g. 32, 64, 128)")
    return f"int4-g{group}" if kind == "int4" else kind


def check_quantizable(config, what: str) -> None:
    """Quantized weights (quantize=..., or a GPTQ / AWQ / compressed-tensors / FP8 / GGUF checkpoint) are held
    for the "layers" stack's attention and MLP matmuls only: refused where the model has more (latent attention,
    dense first layers)."""
    if config.mla is not None or config.dense_layers:
        raise ConfigError(f"{what}: quantized weights are not supported for model_type={config.model_type!r} yet "
                          "(latent attention / dense first layers); load a float (e.g. bfloat16) checkpoint")


def quantize_params(params: dict, kind: str, group: int = DEFAULT_GROUP) -> dict:
    """The decoder's parameter dict with every matmul weight quantized (embeddings and norms kept).

    Stacked layer weights are quantized layer by layer (a scale never spans two layers). A hybrid's
    Gated DeltaNet stack ("linear_layers") has its projections quantized; its short convolutions,
    decay and gate parameters stay as loaded.
    """
    def one(name, w, stack_name="layers"):
        try:
            return quantize(w, kind, contraction_dims(name, stack_name), group)
        except ValueError as e:
            raise ConfigError(f"quantize={kind}: weight {stack_name}/{name}: {e}") from None

    out = dict(params)
    for stack_name in ("layers", "linear_layers"):
        if stack_name not in params:
            continue
        layers = dict(params[stack_name])
        for name, _, _ in layer_matmuls({name: np.shape(w) for name, w in params[stack_name].items()}, stack_name):
            host = np.asarray(params[stack_name][name], np.float32)
            layers[name] = stack([one(name, host[i], stack_name) for i in range(host.shape[0])])
        out[stack_name] = layers
    if "lm_head" in params:
        out["lm_head"] = one("lm_head", np.asarray(params["lm_head"], np.float32))
    return out


def param_bytes(params) -> int:
    """Bytes the parameters hold (codes, scales and zero points counted as stored)."""
    leaves = jax.tree.leaves(params)
    return sum(int(np.prod(a.shape)) * np.dtype(a.dtype).itemsize for a in leaves)


def dequantize_tree(tree, dtype):
    """Every Quantized weight of a parameter tree ({"layers": {...}, ...}) rebuilt as a dense array."""
    def rebuild(w, stacked):
        if not isinstance(w, Quantized):
            return w
        return jax.vmap(dense_weight, in_axes=(0, None))(w, dtype) if stacked else dense_weight(w, dtype)

    stacks = ("layers", "linear_layers")
    out = {name: rebuild(w, False) for name, w in tree.items() if name not in stacks}
    for name in stacks:
        if name in tree:
            out[name] = {leaf: rebuild(w, True) for leaf, w in tree[name].items()}
    return out

