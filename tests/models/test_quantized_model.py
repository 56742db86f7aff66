"""Quantize on load (load_model(quantize=...), --quantize): the jitted read and generation on quantized weights.

The device holds codes and scales; the read must equal, to float32 noise, a float model whose
weights are those codes explicitly dequantized on the host: the dequantization inside the jitted
matmul is the only difference allowed.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxeval
from jaxeval.api import build_module
from jaxeval.errors import ConfigError
from jaxeval.models import quant

TINY = "jaxeval/assets/tiny_llama"


@pytest.fixture(scope="module")
def reference():
    return jaxeval.load_model(TINY, dtype="float32")


def _ids(model, n=257, seed=0):
    ids = np.random.default_rng(seed).integers(3, model.config.vocab_size, n)
    return ids, np.arange(1, n), ids[1:]


def _dequantized_copy(model):
    """A float32 Model holding model's quantized weights dequantized on the host."""
    def host(w, stacked):
        rebuild = jax.vmap(quant.dense_weight, in_axes=(0, None)) if stacked else quant.dense_weight
        return np.asarray(rebuild(w, np.float32)) if quant.is_quantized(w) else w

    dense = {name: host(w, False) for name, w in model._params.items() if name != "layers"}
    dense["layers"] = {name: host(w, True) for name, w in model._params["layers"].items()}
    return jaxeval.api.Model(module=build_module(model.config, dense, "float32"), tokenizer=model.tokenizer,
                             path=model.path, dtype="float32", fingerprint="dequantized-copy")


@pytest.mark.parametrize("kind,group", [("int8", 128), ("int4", 32), ("fp8", 128)])
def test_quantized_read_equals_its_dequantized_float_copy(reference, kind, group):
    model = jaxeval.load_model(TINY, dtype="float32", quantize=kind, quant_group=group)
    assert all(quant.is_quantized(model._params["layers"][name]) for name in ("wq", "wo", "w_gate", "w_down"))
    assert not quant.is_quantized(model._params["embed"])
    ids, positions, tokens = _ids(model)
    got = model.read(ids, positions, tokens)
    want = _dequantized_copy(model).read(ids, positions, tokens)
    np.testing.assert_allclose(np.asarray(got.logprobs), np.asarray(want.logprobs), atol=2e-5)
    exact = reference.read(ids, positions, tokens)
    assert np.abs(np.asarray(got.logprobs) - np.asarray(exact.logprobs)).max() > 1e-4  # really quantized
    assert model.quantization == (f"int4-g{group}" if kind == "int4" else kind)
    assert model.fingerprint != reference.fingerprint
    # the matmul weights are stored at 1 byte (int8, fp8) or half a byte (int4) per element plus scales
    layers = model._params["layers"]
    stored = sum(quant.param_bytes(layers[n]) for n in layers if quant.contraction_dims(n))
    dense = sum(reference._params["layers"][n].nbytes for n in layers if quant.contraction_dims(n))
    assert stored < dense * (0.2 if kind == "int4" else 0.3)


def test_quantized_generation_runs_greedy_and_matches_its_float_copy():
    model = jaxeval.load_model(TINY, dtype="float32", quantize="int8")
    prompt = [int(t) for t in _ids(model, 40, seed=1)[0]]
    got = model.generate([prompt], max_new_tokens=12)[0]
    want = _dequantized_copy(model).generate([prompt], max_new_tokens=12)[0]
    assert got.tokens == want.tokens and len(got.tokens) > 0


def test_bad_quantize_settings_are_one_clear_error():
    with pytest.raises(ConfigError, match="quantize='int2' is not supported"):
        jaxeval.load_model(TINY, dtype="float32", quantize="int2")
    with pytest.raises(ConfigError, match="quant_group=7"):
        jaxeval.load_model(TINY, dtype="float32", quantize="int4", quant_group=7)
    with pytest.raises(ConfigError, match=r"quantize=int4: weight layers/w\w+: int4 groups of 96 rows do not divide the \d+ input rows"):
        jaxeval.load_model(TINY, dtype="float32", quantize="int4", quant_group=96)


def test_cli_quantize_flag_is_recorded_and_names_the_run(tmp_path):
    from jaxeval.cli import main
    import json

    assert main(["run", "--tasks", "agent_bench", "--limit", "1", "--quantize", "int8",
                 "--output_path", str(tmp_path / "q")]) == 0
    assert main(["run", "--tasks", "agent_bench", "--limit", "1", "--output_path", str(tmp_path / "f")]) == 0
    (q,), (f,) = (list((tmp_path / d).glob("*.json")) for d in ("q", "f"))
    qr, fr = json.loads(q.read_text()), json.loads(f.read_text())
    assert qr["model"]["quantization"] == "int8" and fr["model"]["quantization"] is None
    assert qr["model"]["param_bytes"] < fr["model"]["param_bytes"]
    assert qr["run_name"] != fr["run_name"] and qr["config_hash"] == fr["config_hash"]  # the fingerprint differs


def test_model_args_quantize_and_dequantize_are_parsed_or_refused(tmp_path, capsys):
    from jaxeval.cli import main

    assert main(["run", "--tasks", "agent_bench", "--limit", "1", "--model_args", "quant_group=abc",
                 "--output_path", str(tmp_path)]) == 2
    assert "--model_args: quant_group=abc is not valid" in capsys.readouterr().err
    assert main(["run", "--tasks", "agent_bench", "--limit", "1", "--model_args", "dequantize=maybe",
                 "--output_path", str(tmp_path)]) == 2
    assert "--model_args: dequantize=maybe is not valid (expected true or false" in capsys.readouterr().err
