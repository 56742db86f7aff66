"""MXFP4 expert tensors (gpt-oss on the hub) dequantized at load, as transformers' Mxfp4Config(dequantize=True).

The hub's gpt-oss files store each layer's mlp.experts.gate_up_proj and down_proj as
  <name>_blocks uint8 [E, out, G, 16]: 32 FP4 (E2M1) codes per group, two per byte, the low nibble first;
  <name>_scales uint8 [E, out, G]: one E8M0 exponent per group (biased by 127);
value = FP4_VALUES[code] * 2 ** (scale - 127); the [E, out, in] result is transposed to [E, in, out], the
float layout save_pretrained writes (transformers.integrations.mxfp4.convert_moe_packed_tensors).
Every value is exact in bfloat16 (two significant bits times a power of two), which is what this returns:
half the memory of float32, and the model dtype casts it losslessly.
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
