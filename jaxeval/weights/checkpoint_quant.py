"""Quantized Hugging Face safetensors checkpoints (GPTQ, AWQ, compressed-tensors, FP8) as Quantized weights.

config.json's `quantization_config` names the method; each linear layer `B` (B.weight in a float
checkpoint) is stored as follows, and becomes a jaxeval.models.quant.Quantized in our layout
(codes [*in, *out], scales per group of input rows [G, *out]) without a float copy:

- gptq (AutoGPTQ / GPTQModel, bits 4 or 8): B.qweight int32 [in*bits/32, out], values packed along
  the input rows from the low bits up; B.qzeros int32 [G, out*bits/32] packed along the outputs;
  B.scales f16 [G, out]; B.g_idx [in]. w = (q - zero) * scale with zero = stored + 1 in the
  original "gptq" checkpoint format (AutoGPTQ saves zero - 1; AutoAWQ's unpack_reorder_pack notes
  the same convention) and zero = stored in "gptq_v2". An act-order checkpoint (desc_act: g_idx not
  i // group_size) has no contiguous groups: its scales and zeros are repeated per input row (exact,
  but as large as a float32 copy of those weights).
- awq (AutoAWQ, version gemm, 4 bits): B.qweight int32 [in, out/8] and B.qzeros int32 [G, out/8],
  packed along the outputs in AWQ's interleaved order (nibble k of a word holds output column
  AWQ_ORDER[k] of its 8; AutoAWQ's awq/utils/packing_utils.py, dequantize_gemm); B.scales f16 [G, out];
  w = (q - zero) * scale.
- compressed-tensors, format pack-quantized (int4/int8 weights, group or channel strategy, symmetric
  or not): B.weight_packed int32 [out, in*bits/32], values packed along the inputs from the low bits
  up, stored as q + 2**(bits-1) (compressed_tensors ... pack_quantized/helpers.py, pack_to_int32);
  B.weight_scale [out, G]; B.weight_zero_point [out, G] when asymmetric (packed along the outputs
  when stored as int32); w = (q - zero_point) * scale. Format float-quantized: FP8 below with
  B.weight_scale ([1], [out, 1] or [out/128, in/128] blocks).
- fp8 (DeepSeek-V3, Qwen3-FP8: weight_block_size [128, 128]): B.weight float8_e4m3fn [out, in],
  B.weight_scale_inv float32 [ceil(out/128), ceil(in/128)]; w = weight * scale_inv per block.
"""

from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import ModelConfig
from jaxeval.models.param_layout import TOP, fused_rows, hf_name, param_shapes
from jaxeval.models.quant import Quantized, layer_matmuls, pack_int4, stack

METHODS = ("gptq", "awq", "compressed-tensors", "fp8")
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble k of an AWQ word holds output column AWQ_ORDER[k] of its 8


@dataclasses.dataclass(frozen=True)
class Scheme:
    """What config.json's quantization_config says, reduced to what reading the tensors needs."""

    method: str
    bits: int = 4
    group: int = 128  # input rows per scale; -1: one group (per channel)
    symmetric: bool = True
    format: str = ""  # gptq: gptq | gptq_v2; compressed-tensors: pack-quantized | float-quantized | int-quantized
    block: tuple[int, int] | None = None  # fp8 weight_block_size (out, in)

    @property
    def label(self) -> str:
        if self.method == "fp8" or self.format == "float-quantized":
            name = "fp8" if self.method == "fp8" else f"{self.method}-fp8"
            return name + (f"-block{self.block[0]}x{self.block[1]}" if self.block else "")
        return f"{self.method}-int{self.bits}" + ("" if self.group < 0 else f"-g{self.group}")


def read_scheme(raw: dict, where: str) -> Scheme | None:
    """The checkpoint's quantization scheme from config.json (None for a float checkpoint)."""
    qc = raw.get("quantization_config")
    if qc is None:
        return None
    method = qc.get("quant_method") if isinstance(qc, dict) else None
    if method == "mxfp4":  # gpt-oss on the hub: only the experts, dequantized as they load (jaxeval.weights.mxfp4)
        if raw.get("model_type") != "gpt_oss":
            raise ConfigError(f"{where}: quantization_config.quant_method 'mxfp4' is supported for gpt-oss experts "
                              f"only (model_type={raw.get('model_type')!r})")
        return None
    if method not in METHODS:
        raise ConfigError(f"{where}: quantization_config.quant_method {method!r} is not supported "
                          f"(supported: {', '.join(METHODS)})")
    if method == "gptq":
        return Scheme("gptq", int(qc.get("bits", 4)), int(qc.get("group_size", 128)), bool(qc.get("sym", True)),
                      str(qc.get("checkpoint_format", "gptq")))
    if method == "awq":
        if str(qc.get("version", "gemm")).lower() != "gemm" or int(qc.get("bits", qc.get("w_bit", 4))) != 4:
            raise ConfigError(f"{where}: AWQ version {qc.get('version')!r} / bits {qc.get('bits')!r}: only "
                              "4-bit GEMM checkpoints are supported")
        return Scheme("awq", 4, int(qc.get("group_size", qc.get("q_group_size", 128))), bool(qc.get("zero_point", True)))
    if method == "fp8":
        block = qc.get("weight_block_size")
        return Scheme("fp8", 8, -1, True, "fp8", tuple(block) if block else None)
    return _compressed_tensors_scheme(qc, where)


def _compressed_tensors_scheme(qc: dict, where: str) -> Scheme:
    groups = qc.get("config_groups") or {}
    if len(groups) != 1:
        raise ConfigError(f"{where}: compressed-tensors with {len(groups)} config groups is not supported (one)")
    weights = next(iter(groups.values())).get("weights") or {}
    fmt = qc.get("format", "")
    kind, bits, strategy = weights.get("type", "int"), int(weights.get("num_bits", 8)), weights.get("strategy")
    if fmt == "float-quantized" or kind == "float":
        if bits != 8:
            raise ConfigError(f"{where}: compressed-tensors float weights of {bits} bits are not supported (FP8)")
        block = weights.get("block_structure") if strategy == "block" else None
        return Scheme("compressed-tensors", 8, -1, True, "float-quantized", tuple(block) if block else None)
    if fmt not in ("pack-quantized", "int-quantized") or bits not in (4, 8):
        raise ConfigError(f"{where}: compressed-tensors format {fmt!r} with {bits}-bit {kind} weights is not "
                          "supported (pack-quantized int4/int8, int-quantized int8, float-quantized fp8)")
    group = int(weights.get("group_size") or -1) if strategy == "group" else -1
    return Scheme("compressed-tensors", bits, group, bool(weights.get("symmetric", True)), fmt)


def _unpack_rows(packed: np.ndarray, bits: int, rows: int) -> np.ndarray:
    """int32 words [R, C] holding values along dim 0, low bits first -> uint8 [rows, C]."""
    per = 32 // bits
    words = packed.astype(np.int64) & 0xFFFFFFFF
    shifts = np.arange(per, dtype=np.int64) * bits
    values = (words[:, None, :] >> shifts[None, :, None]) & ((1 << bits) - 1)  # [R, per, C]
    return values.reshape(-1, packed.shape[1])[:rows].astype(np.uint8)


def _unpack_cols(packed: np.ndarray, bits: int, cols: int) -> np.ndarray:
    return _unpack_rows(packed.T, bits, cols).T


class _Reader:
    def __init__(self, st, scheme: Scheme):
        self.st, self.scheme = st, scheme

    def tensor(self, name: str) -> np.ndarray:
        if name not in self.st:
            raise CheckpointError(f"{self.st.folder}: {self.scheme.method} checkpoint without tensor {name!r}")
        return np.asarray(self.st.get(name))

    def layer(self, base: str, n_out: int, n_in: int):
        """One linear layer -> (codes [in, out] uint8/int8/fp8, scale [G, out], zero [G, out] | None, shift, block)."""
        s = self.scheme
        if s.method == "gptq":
            return self._gptq(base, n_out, n_in)
        if s.method == "awq":
            q = _unpack_cols(self.tensor(f"{base}.qweight"), 4, n_out)[:, _awq_columns(n_out)]
            zero = _unpack_cols(self.tensor(f"{base}.qzeros"), 4, n_out)[:, _awq_columns(n_out)]
            return q, self.tensor(f"{base}.scales").astype(np.float32), zero, 0, None
        if s.method == "fp8" or s.format == "float-quantized":
            weight = self.tensor(f"{base}.weight")
            if weight.dtype != ml_dtypes.float8_e4m3fn:
                raise CheckpointError(f"{self.st.folder}: {base}.weight is {weight.dtype}, an FP8 checkpoint "
                                      "needs float8_e4m3fn")
            scale = self.tensor(f"{base}.weight_scale_inv" if s.method == "fp8" else f"{base}.weight_scale")
            return weight.T, _fp8_scale(scale.astype(np.float32), n_out, n_in), None, 0, s.block
        return self._compressed(base, n_out, n_in)

    def _gptq(self, base, n_out, n_in):
        s = self.scheme
        q = _unpack_rows(self.tensor(f"{base}.qweight"), s.bits, n_in)  # [in, out]
        zero = _unpack_cols(self.tensor(f"{base}.qzeros"), s.bits, n_out).astype(np.int16)
        if s.format != "gptq_v2":
            zero = (zero + 1) & ((1 << s.bits) - 1)  # AutoGPTQ stored zero - 1 (a zero of 2**bits wraps to 0)
        scale = self.tensor(f"{base}.scales").astype(np.float32)
        group = n_in if s.group < 0 else s.group
        g_idx = self.tensor(f"{base}.g_idx") if f"{base}.g_idx" in self.st else np.arange(n_in) // group
        shift = 128 if s.bits == 8 else 0  # 8-bit codes 0..255 held as int8 c = stored - 128
        if not np.array_equal(np.asarray(g_idx), np.arange(n_in) // group):  # act-order: one row per "group"
            return q, scale[g_idx], zero[g_idx], shift, None
        return q, scale, zero, shift, None

    def _compressed(self, base, n_out, n_in):
        s = self.scheme
        if s.format == "int-quantized":
            q = (self.tensor(f"{base}.weight").astype(np.int16) + 128).T.astype(np.uint8)  # int8 codes, shifted
            shift = 128
        else:
            q = (_unpack_cols(self.tensor(f"{base}.weight_packed"), s.bits, n_in)).T  # [in, out], stored q + 2**(b-1)
            shift = 1 << (s.bits - 1)
        scale = self.tensor(f"{base}.weight_scale").astype(np.float32).T  # [G, out]
        zero = None
        if not s.symmetric:
            zp = self.tensor(f"{base}.weight_zero_point")
            zp = _unpack_rows(zp, s.bits, n_out).astype(np.int16) - shift if zp.dtype == np.int32 else zp.astype(np.int16)
            zero = (zp + shift).T  # zero point of the stored (shifted) codes
        return q, scale, zero, shift, None


def _awq_columns(n_out: int) -> np.ndarray:
    """Column order that puts AWQ's interleaved nibbles back in output order."""
    reverse = np.argsort(AWQ_ORDER)
    return (np.arange(n_out).reshape(-1, 8)[:, reverse]).reshape(-1)


def _fp8_scale(scale: np.ndarray, n_out: int, n_in: int) -> np.ndarray:
    """An FP8 scale as ours: per tensor / per channel -> [1, out]; blocks [out/bo, in/bi] -> [in/bi, out/bo]."""
    if scale.size == 1:
        return np.full((1, n_out), scale.reshape(()), np.float32)
    if scale.shape == (n_out, 1) or scale.shape == (n_out,):
        return scale.reshape(1, n_out)
    return scale.T.copy()


def _quantized(layer, in_shape: tuple[int, ...], out_shape: tuple[int, ...], scheme: Scheme) -> Quantized:
    """One layer's (codes [in, out], scale, zero, shift, block) as a Quantized weight in our layout."""
    codes, scale, zero, shift, block = layer
    n_in = math.prod(in_shape)
    if scheme.method == "fp8" or scheme.format == "float-quantized":
        tile = None if block is None else (int(block[1]), int(block[0]))  # (in, out) tiles in our orientation
        return Quantized(np.ascontiguousarray(codes).reshape(in_shape + out_shape),
                         scale if tile else scale.reshape((1,) + out_shape), None, "fp8", in_shape, block=tile)
    groups = scale.shape[0]
    if n_in % groups:
        raise CheckpointError(f"{groups} scale groups do not divide {n_in} input rows")
    scale = scale.reshape((groups,) + out_shape)
    zero = None if zero is None else np.asarray(zero, np.float32).reshape((groups,) + out_shape)
    if scheme.bits == 4:
        return Quantized(pack_int4(codes.reshape((n_in,) + out_shape)), scale, zero, "int4", in_shape, shift=shift)
    signed = (codes.astype(np.int16) - shift).astype(np.int8)  # int8 codes hold c = stored - shift
    zero = None if zero is None else zero - shift
    return Quantized(signed.reshape(in_shape + out_shape), scale, zero, "int8", in_shape)


def quantized_checkpoint_params(st, c: ModelConfig, scheme: Scheme, prefix: str) -> dict:
    """{"layers": {name: Quantized stacked}, "lm_head"?: Quantized} for the checkpoint's quantized linears."""
    reader = _Reader(st, scheme)
    shapes = param_shapes(c)
    out: dict = {"layers": {}}
    for name, in_shape, out_shape in layer_matmuls(shapes["layers"]):
        base = f"{prefix}layers.{{i}}.{hf_name(name, c).removesuffix('.weight')}"
        if fused_rows(name, c) is not None:
            raise ConfigError(f"{st.folder}: a {scheme.method} checkpoint of a fused projection ({hf_name(name, c)}) "
                              "is not supported")
        if not is_stored_quantized(st, base.format(i=0), scheme):
            continue  # left unquantized by the quantizer (e.g. a layer it skipped): the float path reads it
        layers = [_quantized(reader.layer(base.format(i=i), math.prod(out_shape), math.prod(in_shape)),
                             in_shape, out_shape, scheme) for i in range(c.num_layers)]
        out["layers"][name] = stack(layers)
    head = TOP["lm_head"].hf.removesuffix(".weight")
    if "lm_head" in shapes and is_stored_quantized(st, head, scheme):
        d, v = shapes["lm_head"]
        out["lm_head"] = _quantized(reader.layer(head, v, d), (d,), (v,), scheme)
    return out


def is_stored_quantized(st, base: str, scheme: Scheme) -> bool:
    """Whether linear layer `base` is stored quantized (quantizers leave some layers, often lm_head, in float)."""
    if scheme.method in ("gptq", "awq"):
        return f"{base}.qweight" in st
    if scheme.method == "fp8":
        return f"{base}.weight_scale_inv" in st
    return f"{base}.weight_packed" in st or f"{base}.weight_scale" in st


def folder_scheme(folder) -> Scheme | None:
    """The quantization scheme of a HF folder's config.json (None: a float checkpoint or no config.json)."""
    from pathlib import Path

    from jaxeval.io.inputs import read_json

    path = Path(folder) / "config.json"
    if not path.is_file():
        return None
    raw = read_json(path, ConfigError, "model config")
    return read_scheme(raw, str(path)) if isinstance(raw, dict) else None


def load_quantized_linears(folder, c: ModelConfig, scheme: Scheme) -> dict:
    """quantized_checkpoint_params over the folder's safetensors files."""
    from jaxeval.weights.hf_weights import text_prefix
    from jaxeval.weights.safetensors_io import SafetensorsFolder

    st = SafetensorsFolder(folder)
    return quantized_checkpoint_params(st, c, scheme, text_prefix(st))

