"""MXFP4 expert tensors (gpt-oss on the hub) dequantized at load, as transformers' Mxfp4Config(dequantize=True).

The hub's gpt-oss files store each layer's mlp.experts.gate_up_proj and down_proj as
  <name>_blocks uint8 [E, out, G, 16]: 32 FP4 (E2M1) codes per group, two per byte, the low nibble first;
  <name>_scales uint8 [E, out, G]: one E8M0 exponent per group (biased by 127);
value = FP4_VALUES[code] * 2 ** (scale - 127); the [E, out, in] result is transposed to [E, in, out], the
float layout save_pretrained writes (transformers.integrations.mxfp4.convert_moe_packed_tensors).
Every value is exact in bfloat16 (two significant bits times a power of two), which is what this returns:
half the memory of float32, and the model dtype casts it losslessly.

MXFP4Tensor is that float tensor unread: slicing it composes index ranges, and only the slice finally read
(np.asarray: one device's shard, one layer at a time) is dequantized, from the memory-mapped bytes it needs.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

FP4_VALUES = np.array([+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], np.float32)


def dequantize(blocks: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """blocks uint8 [E, R, G, 16], scales uint8 [E, R, G] -> bfloat16 [E, G * 32, R], one expert at a time."""
    if blocks.ndim != 4 or blocks.shape[-1] != 16 or scales.shape != blocks.shape[:-1]:
        raise ValueError(f"MXFP4 blocks {list(blocks.shape)} and scales {list(scales.shape)} do not match "
                         "([E, R, G, 16] and [E, R, G])")
    out = np.empty((blocks.shape[0], blocks.shape[2] * 32, blocks.shape[1]), ml_dtypes.bfloat16)
    for e in range(blocks.shape[0]):
        b = np.asarray(blocks[e], np.uint8)
        codes = np.stack([b & 0x0F, b >> 4], axis=-1).reshape(*b.shape[:-1], 32)  # [R, G, 32]
        with np.errstate(over="ignore"):  # scale 255 (E8M0's NaN) gives inf, as the reference's ldexp does
            values = np.ldexp(FP4_VALUES[codes], np.asarray(scales[e], np.int32)[..., None] - 127)
        out[e] = values.reshape(b.shape[0], -1).T.astype(ml_dtypes.bfloat16)
    return out


def _as_slice(r: range) -> slice:
    return slice(r.start, r.stop if r.stop >= 0 else None, r.step)


class MXFP4Tensor:
    """The float [E, in, out] tensor of MXFP4 blocks [E, out, G, 16] and scales [E, out, G], dequantized
    only where read. Indexing takes slices (and ...), and gives another MXFP4Tensor."""

    ndim = 3
    dtype = np.dtype(ml_dtypes.bfloat16)

    def __init__(self, blocks, scales, ranges: tuple[range, range, range] | None = None):
        if blocks.ndim != 4 or blocks.shape[-1] != 16 or tuple(scales.shape) != tuple(blocks.shape[:-1]):
            raise ValueError(f"MXFP4 blocks {list(blocks.shape)} and scales {list(scales.shape)} do not match "
                             "([E, out, G, 16] and [E, out, G])")
        self.blocks, self.scales = blocks, scales
        e, out, groups, _ = blocks.shape
        self.ranges = ranges or (range(e), range(groups * 32), range(out))

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(len(r) for r in self.ranges)

    def __getitem__(self, key) -> "MXFP4Tensor":
        key = key if isinstance(key, tuple) else (key,)
        if Ellipsis in key:
            at = key.index(Ellipsis)
            key = key[:at] + (slice(None),) * (self.ndim - len(key) + 1) + key[at + 1:]
        key = key + (slice(None),) * (self.ndim - len(key))
        if len(key) != self.ndim or not all(isinstance(k, slice) for k in key):
            raise TypeError(f"MXFP4Tensor takes slices only, got {key!r}")
        return MXFP4Tensor(self.blocks, self.scales, tuple(r[k] for r, k in zip(self.ranges, key)))

    def __array__(self, dtype=None, copy=None):
        experts, inputs, outputs = self.ranges
        if not (len(experts) and len(inputs) and len(outputs)):
            dense = np.zeros(self.shape, self.dtype)
        else:
            first, last = min(inputs) // 32, max(inputs) // 32 + 1  # the groups holding the inputs read
            pick = (_as_slice(experts), _as_slice(outputs), slice(first, last))
            dense = dequantize(self.blocks[pick], self.scales[pick])
            offset = first * 32
            dense = dense[:, _as_slice(range(inputs.start - offset, inputs.stop - offset, inputs.step))]
        return dense if dtype is None else dense.astype(dtype)
