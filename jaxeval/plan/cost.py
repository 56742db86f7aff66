"""From recorded requests to FLOPs, memory and time (the plan's numbers).

FLOPs are the formula jaxeval bench reports too (jaxeval.plan.flops.read_flops: every matmul once, attention
causal and windowed, the head at read rows only) over the work actually run: a continuation after
a shared prefix costs read_flops(end) - read_flops(first). A generation counts the prompt's
prefill and max_new_tokens decode steps (the bound: a generation may end early at EOS).
"""

from __future__ import annotations

import numpy as np

from jaxeval.engine.buckets import LENGTH_LADDER, length_bucket
from jaxeval.plan.flops import read_flops


def length_bin(tokens: int) -> str:
    """The label of the smallest power-of-two-k bin holding `tokens` (<=1k, <=2k, ... <=128k, >128k)."""
    for bound in (2 ** i * 1024 for i in range(8)):
        if tokens <= bound:
            return f"<={bound // 1024}k"
    return ">128k"


def _trunk(config, tokens: int) -> float:
    return read_flops(config, tokens, 0)["total"] if tokens > 0 else 0.0


def head_flops(config, rows: int) -> float:
    return 2.0 * rows * config.hidden_size * config.vocab_size


def segment_flops(config, first: int, end: int, rows: int) -> float:
    return _trunk(config, end) - _trunk(config, first) + head_flops(config, rows)


def generation_flops(config, prompt: int, new: int) -> tuple[float, float]:
    """(prefill FLOPs of the prompt but its last token, decode FLOPs of `new` steps)."""
    return _trunk(config, prompt - 1), segment_flops(config, prompt - 1, prompt - 1 + new, new)


def itemsize(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


def weight_bytes(config, dtype: str, quantize: str | None, quant_group: int, gguf_path=None) -> int:
    """Bytes the weights hold on the devices: shapes x dtype, matmul weights as the quantization
    stores them (jaxeval.models.quant, exact: one reduced slice quantized and scaled), a GGUF kept
    in block codes as its file's size."""
    from jaxeval.models.param_layout import param_shapes

    if gguf_path is not None and not quantize:
        return int(gguf_path.stat().st_size)
    total = 0
    for name, shape in _flatten(param_shapes(config)).items():
        if quantize and _is_matmul(name):
            total += _quantized_bytes(name, shape, quantize, quant_group)
        else:
            total += int(np.prod(shape)) * itemsize(dtype)
    return total


def _flatten(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}/"))
        else:
            out[f"{prefix}{key}"] = tuple(value)
    return out


def _stack(name: str) -> str | None:
    """The layer stack a flattened parameter name sits in ("layers", "linear_layers"), None for top-level ones."""
    head = name.split("/")[0]
    return head if head in ("layers", "linear_layers") and "/" in name else None


def _is_matmul(name: str) -> bool:
    from jaxeval.models.quant import contraction_dims

    leaf, stack = name.split("/")[-1], _stack(name)
    return bool(contraction_dims(leaf, stack)) if stack else leaf == "lm_head"


def _quantized_bytes(name: str, shape: tuple, kind: str, group: int) -> int:
    """Bytes of one (stacked) matmul weight as quant.quantize stores it: the output dims reduced
    to 1 (its scales and codes scale linearly with them), layers quantized one by one."""
    from jaxeval.models.quant import contraction_dims, param_bytes, quantize

    leaf, stack = name.split("/")[-1], _stack(name)
    stacked = stack is not None
    one = shape[1:] if stacked else shape
    inputs = contraction_dims(leaf, stack or "layers")
    reduced = tuple(one[:inputs]) + (1,) * (len(one) - inputs)
    factor = int(np.prod(one[inputs:])) * (shape[0] if stacked else 1)
    return param_bytes(quantize(np.zeros(reduced, np.float32), kind, inputs, group)) * factor


def kv_bytes(config, rows: int, length: int, dtype: str) -> int:
    """K and V of every layer for `rows` sequences of `length` cache positions (latent attention: its
    [k_rope, c_kv] keys only, the value cache being empty)."""
    width = config.head_dim + config.value_dim
    return config.num_layers * rows * length * config.num_kv_heads * width * itemsize(dtype)


def prefill_activation_bytes(config, tokens: int, dtype: str) -> int:
    """One row's live activations in a prefill step of `tokens` positions, beside its cache: the residual
    stream and its normed copy, q, k, v and the attention output, the MLP's gate, up and product (a MoE:
    its top-k experts' and shared experts' widths per token), and the chunked attention's float32 scores
    and probabilities of one query block of every head against one key block."""
    from jaxeval.models.attention import CHUNKED_BLOCK

    c = config
    if c.moe is not None:
        mlp = c.moe.top_k * c.moe_intermediate_size + c.shared_expert_intermediate_size
    else:
        mlp = c.intermediate_size
    width = 2 * c.hidden_size + (2 * c.num_heads + 2 * c.num_kv_heads) * c.head_dim + 3 * mlp
    scores = 2 * c.num_heads * min(CHUNKED_BLOCK, tokens) * CHUNKED_BLOCK * 4
    return tokens * width * itemsize(dtype) + scores


def per_chip(weights: int, kv: int, mesh: dict) -> int:
    """Bytes on one chip: weights split over fsdp x tensor, caches over tensor x context (and the
    data axis's share of the rows), as jaxeval.models.sharding lays them out."""
    return int(weights / (mesh["fsdp"] * mesh["tensor"]) + kv / (mesh["tensor"] * mesh["context"] * mesh["data"]))


def cache_lengths(recorder) -> tuple[int, tuple[int, int]]:
    """(the longest read's cache bucket, (rows, cache length) of the largest generation batch)."""
    read = max((length_bucket(s.end) for s in recorder.reads if s.end), default=0)
    gen = max(((_rows(len(b.prompts)), b.cache_len) for b in recorder.batches), key=lambda x: x[0] * x[1],
              default=(0, 0))
    return read, gen


def _rows(n: int) -> int:
    from jaxeval.engine.decode_cache import batch_bucket

    return batch_bucket(n)


def read_buckets(recorder) -> set[int]:
    return {length_bucket(s.end) for s in recorder.reads if s.end}


__all__ = ["LENGTH_LADDER", "cache_lengths", "generation_flops", "head_flops", "kv_bytes", "length_bin",
           "per_chip", "read_buckets", "segment_flops", "weight_bytes"]
