"""The `tpu_compile` tier (by hand, ~N minutes on two cores: python -m pytest -q -m tpu_compile tests/aot):
the Llama-3.1-8B shape in bfloat16 reading 32,768 and 131,072 tokens on v5e-8, v5p-8 and v6e-8 with
splash compiled as Mosaic, its decode step at batch 8 after a 128k prompt, a Qwen3.5 hybrid and an MoE
on an expert mesh: every program compiles and fits, the traced matmul FLOPs are jaxeval's count
(within 1.15x), and splash executes at most 1.1x the causal minimum of blocks over a multi-chunk read."""

from __future__ import annotations

import pytest

from tests.aot.test_compile import check_report, compile_cli, needs_tpu

pytestmark = [pytest.mark.tpu_compile, needs_tpu]


def check_work(report, flops=True):
    for p in report["programs"]:
        if flops and p["flops_xla_needed"]:
            assert 1 / 1.15 <= p["flops_ratio"] <= 1.15, (p["name"], p["flops_ratio"])
        if p.get("splash"):
            assert p["mosaic_kernels"] >= 1, p["name"]  # compiled by Mosaic, not Pallas interpret mode
            assert p["splash"]["ratio"] <= 1.1, (p["name"], p["splash"])


@pytest.mark.parametrize("target", ["v5e-8", "v5p-8", "v6e-8"])
def test_llama_8b_reads_32k_and_128k(tmp_path, target):
    code, report, err = compile_cli(tmp_path, target, "--model", "llama-3.1-8b", "--lengths", "32k,128k")
    assert code == 0, err[-2000:]
    check_report(report, {"v5p-8": 4}.get(target, 8))
    assert report["attention"] == "splash"
    check_work(report)
    assert [p["length"] for p in report["programs"] if p["name"].startswith("prefill_chunk")] == [32768, 131072]


def test_llama_8b_decode_batch_8_after_a_128k_prompt(tmp_path):
    code, report, err = compile_cli(tmp_path, "v5p-8", "--model", "llama-3.1-8b", "--lengths", "130048",
                                    "--batch_size", "8", "--new_tokens", "1024")
    assert code == 0, err[-2000:]
    check_report(report, 4)
    check_work(report)
    step = report["programs"][-1]
    assert step["name"] == "decode_step[rows=8,cache=131072]"


def test_qwen3_5_hybrid_reads_32k(tmp_path):
    # splash in the full-attention layers, per shard (the decoder's shard_map): as Mosaic on the mesh
    code, report, err = compile_cli(tmp_path, "v6e-8", "--model", "qwen3.5-hybrid-4b", "--lengths", "32k",
                                    "--new_tokens", "256", "--mesh", "tensor=8", timeout=2400)
    assert code == 0, err[-2000:]
    check_report(report, 8)
    check_work(report)
    assert report["attention"] == "splash"
    assert report["programs"][0]["name"].startswith("prefill_hybrid_chunk")


def test_moe_on_an_expert_mesh(tmp_path):
    code, report, err = compile_cli(tmp_path, "v6e-8", "--model", "qwen3-30b-a3b", "--lengths", "32k",
                                    "--mesh", "expert=8")
    assert code == 0, err[-2000:]
    check_report(report, 8)
    assert report["mesh"] == "expert=8"
    check_work(report)  # the routed experts as TPU grouped matmuls (ragged_dot), each shard's own pairs
    prefill = report["programs"][0]
    assert prefill["flops_program_loops_counted_once"] == 1  # splash's history loop only: no blocked MoE loop
    assert prefill["mosaic_kernels"] > 2  # splash and the grouped matmuls
