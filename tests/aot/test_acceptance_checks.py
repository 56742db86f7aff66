"""scripts/compile_acceptance.py's checks on reports (no compile): the peak bound, the not-fitting rule
and splash, each able to fail."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GIB = 2 ** 30


@pytest.fixture(scope="module")
def acceptance():
    spec = importlib.util.spec_from_file_location("compile_acceptance", ROOT / "scripts/compile_acceptance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def record(peak_gib, weights_gib=15.0, kv_gib=4.0, compiled=True, error=None, splash=None, compiler_peak_gib=None):
    return {"name": "prefill_chunk[rows=1,chunk=2048,bucket=32768]", "compiled": compiled, "fits": compiled,
            "peak_bytes_per_chip": None if peak_gib is None else int(peak_gib * GIB),
            "holds": {"weights": int(weights_gib * GIB), "kv_cache": int(kv_gib * GIB)}, "error": error,
            "memory": {"compiler_peak": int((compiler_peak_gib or peak_gib or 0) * GIB)}, "splash": splash,
            "mosaic_kernels": 2 if splash else None}


def test_the_peak_lies_between_what_the_chip_holds_and_1_5x_plus_a_chunk(acceptance):
    from jaxeval.aot.shapes import named_config

    config = named_config("llama-3.1-8b")
    assert acceptance.check_program(record(19.5), config, "fits") == []
    assert "below" in acceptance.check_program(record(18.0), config, "fits")[0]
    assert "above 1.5 x 19.00 GiB" in acceptance.check_program(record(30.0), config, "fits")[0]
    late = record(19.5, splash={"ratio": 2.0})
    assert "splash executes 2.00x" in acceptance.check_program(late, config, "fits")[0]
    refused = record(None, compiled=False, error="JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory on HBM")
    assert acceptance.check_program(refused, config, "not_fit") == []
    assert acceptance.check_program(refused, config, "fits")  # expected to fit: a failure
    broken = record(None, compiled=False, error="NotImplementedError: Mosaic kernels cannot be partitioned")
    assert acceptance.check_program(broken, config, "not_fit")  # refused, but not for memory


def test_not_fitting_means_the_compiler_refuses(acceptance):
    tpu = {"platform": "tpu", "hbm_bytes_per_chip": int(15.75 * GIB)}
    cuda = {"platform": "cuda", "hbm_bytes_per_chip": int(140.4 * GIB)}
    assert acceptance.refused(record(None, compiled=False, error="RESOURCE_EXHAUSTED: ..."), tpu)
    assert not acceptance.refused(record(17.0, compiler_peak_gib=15.0), tpu)  # jaxeval's sum only: not refused
    assert acceptance.refused(record(142.0, compiler_peak_gib=140.8), cuda)  # the compiler's own peak over
    assert not acceptance.refused(record(141.4, compiler_peak_gib=0.03), cuda)  # the resident cache only
