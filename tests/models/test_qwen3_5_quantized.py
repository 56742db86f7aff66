"""Quantize on load for the Qwen3.5 hybrid: the Gated DeltaNet projections, the output gate and every MLP
quantized, the read equal to a float copy holding those codes dequantized on the host (the in-jit
dequantization the only difference). Decode runs the same layer functions (jaxeval.models.hybrid)."""

from __future__ import annotations

import numpy as np
import pytest

import jaxeval
from jaxeval.api import Model, build_module
from jaxeval.models import quant
from test_qwen3_5 import VOCAB, every_position, reference  # noqa: F401 (the module's fixture)

GDN_MATMULS = ("wq", "wk", "wv", "wz", "wb", "wa", "wo", "w_gate", "w_up", "w_down")


@pytest.mark.parametrize("kind,group", [("int4", 16)])  # int8 and fp8 take the same path (quant.quantize)
def test_quantized_hybrid_read_equals_its_dequantized_copy(reference, kind, group):  # noqa: F811
    _, folder = reference
    load = dict(dtype="float32", load_tokenizer=False, prefill_chunk=128)
    exact = jaxeval.load_model(folder, **load)
    model = jaxeval.load_model(folder, quantize=kind, quant_group=group, **load)
    linear, full = model._params["linear_layers"], model._params["layers"]
    assert all(quant.is_quantized(linear[name]) for name in GDN_MATMULS)
    assert all(quant.is_quantized(full[name]) for name in ("wq", "wq_gate", "wk", "wo", "w_down"))
    assert not any(quant.is_quantized(linear[name]) for name in ("conv_q", "conv_v", "a_log", "dt_bias", "norm"))
    dense = quant.dequantize_tree(model._params, np.float32)
    copy = Model(module=build_module(model.config, dense, "float32"), tokenizer=None, path=model.path,
                 dtype="float32", fingerprint="dequantized-copy")
    ids = np.random.default_rng(5).integers(3, VOCAB, 300)  # three prefill chunks: the states carried quantized
    got = every_position(model, ids)
    np.testing.assert_allclose(got, every_position(copy, ids), atol=2e-5, rtol=0)
    assert np.abs(got - every_position(exact, ids)).max() > 1e-4  # really quantized
    assert model.quantization == (f"int4-g{group}" if kind == "int4" else kind)
