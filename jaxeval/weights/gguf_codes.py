"""GGUF block-quantized tensors as integer codes with per-group scales and offsets.

Every llama.cpp block format this module knows dequantizes, in the gguf package (llama.cpp's own
Python reader), as w = scale * code + offset per group of consecutive input elements, in float32:

  type   group  scale          offset         codes      (fields of a block, ggml's layout)
  Q8_0    32    d              -              -128..127  d f16, qs int8[32]
  Q4_0    32    d              -              -8..7      d f16, qs[16] (nibbles)
  Q4_1    32    d              m              0..15      d f16, m f16, qs[16]
  Q5_0    32    d              -              -16..15    d f16, qh u32, qs[16]
  Q5_1    32    d              m              0..31      d f16, m f16, qh u32, qs[16]
  Q4_K    32    d * sc         -(dmin * m)    0..15      d, dmin f16, 12 bytes of 6-bit sc/m (8 sub-blocks), qs[128]
  Q5_K    32    d * sc         -(dmin * m)    0..31      as Q4_K, with qh[32]
  Q6_K    16    d * scales     -              -32..31    ql[128], qh[64], scales int8[16], d f16

Scales and offsets are read from the block headers (the K types' packed 6-bit sub-block scales
through gguf's own Q4_K.get_scale_min); the codes are then recovered from gguf's float32
dequantization, code = (w - offset) / scale rounded, and checked: scale * code + offset must give
back every dequantized element exactly (a zero's sign aside), or the tensor is refused. So the codes never depend on
a second reading of the bit layouts, and what the device rebuilds is exactly what transformers'
GGUF loading (which calls the same dequantization) computes, up to XLA's rounding of the multiply-add.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxeval.errors import CheckpointError


@dataclasses.dataclass(frozen=True)
class Format:
    group: int  # elements per scale
    block_bytes: int  # bytes per ggml block
    block_elems: int  # elements per ggml block
    codes: tuple[int, int]  # the codes' range, inclusive
    header: str  # how scales and offsets are read (a key of _HEADERS)


FORMATS = {
    "Q8_0": Format(32, 34, 32, (-128, 127), "d"),
    "Q4_0": Format(32, 18, 32, (-8, 7), "d"),
    "Q4_1": Format(32, 20, 32, (0, 15), "dm"),
    "Q5_0": Format(32, 22, 32, (-16, 15), "d"),
    "Q5_1": Format(32, 24, 32, (0, 31), "dm"),
    "Q4_K": Format(32, 144, 256, (0, 15), "k"),
    "Q5_K": Format(32, 176, 256, (0, 31), "k"),
    "Q6_K": Format(16, 210, 256, (-32, 31), "q6k"),
}


@dataclasses.dataclass
class Codes:
    """One tensor's codes [rows, cols] int8, scales and offsets [rows, cols / group] float32 (offset may be None)."""

    codes: np.ndarray
    scale: np.ndarray
    offset: np.ndarray | None
    group: int
    code_range: tuple[int, int]


def _f16(blocks: np.ndarray, start: int) -> np.ndarray:
    return blocks[:, start:start + 2].copy().view(np.float16).astype(np.float32)[:, 0]


def _scales_offsets(kind: str, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Per block: scale [n, groups per block] and offset (or None), as gguf's dequantization forms them."""
    from gguf import quants

    header = FORMATS[kind].header
    if header == "d":
        return _f16(blocks, 0)[:, None], None
    if header == "dm":
        return _f16(blocks, 0)[:, None], _f16(blocks, 2)[:, None]
    if header == "k":
        d, dmin = _f16(blocks, 0), _f16(blocks, 2)
        sc, m = quants.Q4_K.get_scale_min(blocks[:, 4:16])
        sc, m = sc.reshape(len(blocks), -1).astype(np.float32), m.reshape(len(blocks), -1).astype(np.float32)
        return d[:, None] * sc, -(dmin[:, None] * m)
    scales = blocks[:, 192:208].copy().view(np.int8).astype(np.float32)  # Q6_K
    return _f16(blocks, 208)[:, None] * scales, None


def read_codes(tensor, where: str) -> Codes | None:
    """A gguf ReaderTensor as Codes in its ggml layout [rows (outputs), cols (inputs)]; None if not block-quantized.

    Raises CheckpointError (naming `where`) for a type outside FORMATS or codes that do not reproduce
    the dequantized tensor exactly.
    """
    from gguf import quants

    kind = tensor.tensor_type.name
    if kind in ("F32", "F16", "BF16"):
        return None
    if kind not in FORMATS:
        raise CheckpointError(f"{where}: GGUF type {kind} cannot be kept quantized on the device "
                              f"(known: {', '.join(FORMATS)}); load it with dequantize=true")
    fmt = FORMATS[kind]
    rows, cols = int(tensor.shape[1]), int(tensor.shape[0])  # ggml lists the fastest dimension first
    blocks = np.asarray(tensor.data).reshape(-1, fmt.block_bytes)
    w = quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(rows, cols)
    scale, offset = _scales_offsets(kind, blocks)
    scale = scale.reshape(rows, cols // fmt.group).astype(np.float32)
    offset = None if offset is None else offset.reshape(rows, cols // fmt.group).astype(np.float32)
    wide = lambda a: np.repeat(a, fmt.group, axis=1)  # noqa: E731 - per element
    s = wide(scale)
    o = np.float32(0) if offset is None else wide(offset)
    with np.errstate(divide="ignore", invalid="ignore"):
        codes = np.where(s != 0, np.rint((w - o) / np.where(s != 0, s, 1)), 0)
    lo, hi = fmt.codes
    if codes.min() < lo or codes.max() > hi:
        raise CheckpointError(f"{where}: {kind} codes outside [{lo}, {hi}]; load it with dequantize=true")
    codes = codes.astype(np.int8)  # no negative zero: what the device holds
    rebuilt = s * codes.astype(np.float32)
    if offset is not None:
        rebuilt = rebuilt + o
    bad = int(np.sum(rebuilt != w))  # exact, except that a zero scale's -0.0 and +0.0 count as equal
    if bad:
        raise CheckpointError(f"{where}: {kind} codes do not reproduce the dequantized tensor ({bad} elements "
                              "differ); load it with dequantize=true")
    return Codes(codes, scale, offset, fmt.group, fmt.codes)
