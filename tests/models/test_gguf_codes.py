"""GGUF block codes kept quantized (jaxeval/weights/gguf_codes.py, gguf_quantized.py): every known block type,
random blocks, rebuilt on the device against the gguf package's own dequantization."""

from __future__ import annotations

import types

import gguf
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxeval.errors import CheckpointError
from jaxeval.models import quant
from jaxeval.weights import gguf_codes, gguf_quantized

ROWS, COLS = 6, 512


def random_tensor(kind: str, seed: int = 0, rows: int = ROWS, cols: int = COLS):
    """A ggml tensor of random blocks of `kind` (any bits are a valid block once its f16 scales are finite)."""
    fmt = gguf_codes.FORMATS[kind]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (rows * cols // fmt.block_elems, fmt.block_bytes), dtype=np.uint8)
    f16_at = {"d": (0,), "dm": (0, 2), "k": (0, 2), "q6k": (208,)}[fmt.header]
    for at in f16_at:
        blocks[:, at:at + 2] = rng.uniform(-0.05, 0.05, len(blocks)).astype(np.float16).view(np.uint8).reshape(-1, 2)
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    return types.SimpleNamespace(tensor_type=qtype, shape=np.array([cols, rows]),
                                 data=blocks.reshape(rows, -1), name=f"blk.0.{kind}")


def dequantized(tensor) -> np.ndarray:
    rows, cols = int(tensor.shape[1]), int(tensor.shape[0])
    return gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(rows, cols)


@pytest.mark.parametrize("kind", list(gguf_codes.FORMATS))
def test_codes_rebuild_every_block_type_on_the_device(kind):
    tensor = random_tensor(kind)
    codes = gguf_codes.read_codes(tensor, "t")
    lo, hi = gguf_codes.FORMATS[kind].codes
    assert codes.codes.min() >= lo and codes.codes.max() <= hi and codes.codes.max() > codes.codes.min()
    # our layout: a [COLS (in) | ROWS (out)] weight, stacked as one layer, rebuilt inside jit
    stacked = gguf_quantized._stack([gguf_quantized._ours(codes, (COLS, ROWS), 1)], (COLS,))
    assert stacked.kind == ("int4" if hi - lo < 16 else "int8")
    layer = jax.tree.map(lambda a: a[0], stacked)
    rebuilt = np.asarray(jax.jit(lambda w: quant.dense_weight(w, jnp.float32))(layer))
    want = dequantized(tensor).T
    np.testing.assert_allclose(rebuilt, want, rtol=2 ** -23, atol=0)  # XLA may fuse scale * c + offset
    assert quant.param_bytes(stacked) < want.nbytes * (0.35 if stacked.kind == "int4" else 0.55)


def test_layers_of_mixed_block_types_stack_on_the_smallest_group():
    """Q4_K_M writes a parameter's layers in several types (ffn_down: Q4_K and Q6_K)."""
    tensors = [random_tensor("Q4_K", 1), random_tensor("Q6_K", 2)]
    layers = [gguf_quantized._ours(gguf_codes.read_codes(t, "t"), (COLS, ROWS), 1) for t in tensors]
    stacked = gguf_quantized._stack(layers, (COLS,))
    assert stacked.kind == "int8" and stacked.scale.shape == (2, COLS // 16, ROWS) and stacked.offset is not None
    for i, tensor in enumerate(tensors):
        rebuilt = np.asarray(quant.dense_weight(jax.tree.map(lambda a: a[i], stacked), jnp.float32))
        np.testing.assert_allclose(rebuilt, dequantized(tensor).T, rtol=2 ** -23, atol=0)


def test_a_type_without_codes_is_refused_naming_the_tensor():
    tensor = random_tensor("Q4_K")
    tensor.tensor_type = gguf.GGMLQuantizationType.Q2_K
    with pytest.raises(CheckpointError, match="where: GGUF type Q2_K cannot be kept quantized.*dequantize=true"):
        gguf_codes.read_codes(tensor, "where")
    float_tensor = types.SimpleNamespace(tensor_type=gguf.GGMLQuantizationType.F32)
    assert gguf_codes.read_codes(float_tensor, "where") is None
