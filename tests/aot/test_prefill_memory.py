"""The 8B's read prefill compiled for an H200 holds no copy of a cache layer (issue 25 part 3).

The layer scan used to slice each layer's K/V out of the cache (and the chunk was written into it and
again into the stacked cache): the compiled prefill chunk's temporaries at 128k held 1.18 GiB, more
than two layers' K/V. Now the chunked backend (the one a GPU compiles without the cuDNN wheel) reads
key blocks from the stacked cache where they lie, so the temporaries are the chunk's activations,
below one layer's K and V (512 MiB at 131,072 positions)."""

from __future__ import annotations

import pytest

from test_compile import compile_cli, needs_cuda


@needs_cuda
@pytest.mark.slow
def test_h200_8b_128k_prefill_temporaries_hold_no_cache_layer(tmp_path):
    code, report, err = compile_cli(tmp_path, "h200", "--model", "llama-3.1-8b", "--lengths", "128k")
    assert code == 0, err
    prefill = report["programs"][0]
    assert prefill["name"].startswith("prefill_chunk[rows=1,chunk=2048,bucket=131072]")
    layer_kv = 2 * 131072 * 8 * 128 * 2  # one layer's K and V, bfloat16
    assert prefill["memory"]["temp"] < layer_kv, prefill["memory"]
    assert prefill["memory"]["alias"] == prefill["holds"]["kv_cache"]  # the donated cache is updated in place


@needs_cuda
@pytest.mark.slow
def test_h200_8b_batch4_prefill_holds_no_second_cache(tmp_path):
    """Several rows: the GPU compiler laid the whole cache out KV-major around the layer loop (batch 4 at
    32k: a second 16 GiB cache in the temporaries); attention now runs the rows one at a time on GPU."""
    code, report, err = compile_cli(tmp_path, "h200", "--model", "llama-3.1-8b", "--lengths", "32k",
                                    "--batch_size", "4")
    assert code == 0, err
    prefill = report["programs"][0]
    assert prefill["name"].startswith("prefill_chunk[rows=4,chunk=2048,bucket=32768]")
    assert prefill["memory"]["temp"] < prefill["holds"]["kv_cache"] / 4, prefill["memory"]
