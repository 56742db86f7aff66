"""The compile tiers of issue 25 (libtpu installed; docs/compile.md).

`tpu_compile_ci` (.ci/run: python -m pytest -q -m tpu_compile_ci tests/aot): the Llama-3.1-8B shape in
bfloat16 reading 32,768 and 131,072 tokens on v5e-8, v5p-8 and v6e-8 with splash compiled as Mosaic,
its decode step at batch 8 after a 128k prompt, a Qwen3.5 hybrid shape (its widths, one Gated DeltaNet
layer to one full-attention layer) and the MoE shape on an expert mesh: every program compiles and
fits, the traced matmul FLOPs are jaxeval's count (within 1.15x), and splash executes at most 1.1x the
causal minimum of blocks over a multi-chunk read. The selected cases' `jaxeval compile` processes run
two at a time (a compile is mostly single-threaded), started when the first of them is asked for;
JAXEVAL_COMPILE_REPORTS=DIR keeps their reports (scripts/compile_acceptance.py --check DIR/*.json).

`tpu_compile` (by hand: python -m pytest -q -m tpu_compile tests/aot): the Qwen3.5 4B shape itself
(three Gated DeltaNet layers to one full-attention layer) read and generated on v6e-8."""

from __future__ import annotations

import concurrent.futures
import json
import os
import time

import pytest

from tests.aot.test_compile import check_report, compile_cli, compile_cli_timed, needs_tpu

pytestmark = [needs_tpu]

# Qwen3.5-4B's widths (jaxeval.aot.shapes "qwen3.5-hybrid-4b") in a shorter pattern, one Gated DeltaNet
# layer per full-attention layer: the layer groups are scanned, so a program compiles its group body once,
# and the 4B's body of three DeltaNet layers costs three times the DeltaNet's compile (about 20 s of CPU each
# for v6e) where this one costs one; the code paths (DeltaNet chunk rule, gated attention with splash per
# shard, the group scan) are the same.
QWEN35_CI = dict(model_type="qwen3_5_text", vocab_size=248320, hidden_size=2560, intermediate_size=9216,
                 num_hidden_layers=8, num_attention_heads=16, num_key_value_heads=4, head_dim=256,
                 linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                 linear_value_head_dim=128, linear_conv_kernel_dim=4, max_position_embeddings=262144,
                 layer_types=["linear_attention", "full_attention"] * 4, eos_token_id=248044,
                 tie_word_embeddings=True, torch_dtype="bfloat16",
                 rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                                  "mrope_section": [11, 11, 10]})

CI_CASES = {  # case -> jaxeval compile's arguments (a config folder written for "{hybrid}")
    "8b-reads-v5e-8": ["v5e-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"],
    "8b-reads-v5p-8": ["v5p-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"],
    "8b-reads-v6e-8": ["v6e-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"],
    "8b-decode-v5p-8": ["v5p-8", "--model", "llama-3.1-8b", "--lengths", "130048", "--batch_size", "8",
                        "--new_tokens", "1024", "--programs", "generate"],
    "hybrid-v6e-8": ["v6e-8", "--model", "{hybrid}", "--lengths", "32k", "--mesh", "tensor=8"],
    "moe-v6e-8": ["v6e-8", "--model", "qwen3-30b-a3b", "--lengths", "32k", "--mesh", "expert=8"],
}


@pytest.fixture(scope="session")
def ci_compiles(request, tmp_path_factory):
    """case -> a future of (exit code, report, stderr, wall s): the session's selected cases compiled two
    at a time, each in its own `jaxeval compile` process."""
    selected = [item.callspec.params["case"] for item in request.session.items
                if item.get_closest_marker("tpu_compile_ci") and hasattr(item, "callspec")]
    folder = tmp_path_factory.mktemp("ci_compiles")
    (folder / "qwen3_5_ci").mkdir()
    (folder / "qwen3_5_ci" / "config.json").write_text(json.dumps(QWEN35_CI))

    def run(case):
        args = [a.replace("{hybrid}", str(folder / "qwen3_5_ci")) for a in CI_CASES[case]]
        (folder / case).mkdir()
        started = time.perf_counter()
        code, report, err, cpu = compile_cli_timed(folder / case, *args, timeout=1500)
        print(f"\n{case}: jaxeval compile {' '.join(CI_CASES[case])}: {time.perf_counter() - started:.0f} s wall, "
              f"{cpu:.0f} s CPU, load average {os.getloadavg()[0]:.1f}", flush=True)
        keep = os.environ.get("JAXEVAL_COMPILE_REPORTS")  # a folder to keep the reports in (compile_acceptance --check)
        if keep and report is not None:
            os.makedirs(keep, exist_ok=True)
            with open(os.path.join(keep, f"{case}.json"), "w") as f:
                json.dump(report, f, indent=2)
        return code, report, err

    pool = concurrent.futures.ThreadPoolExecutor(2)
    futures = {case: pool.submit(run, case) for case in dict.fromkeys(selected)}
    yield futures
    pool.shutdown(wait=False, cancel_futures=True)


def check_work(report, flops=True):
    for p in report["programs"]:
        if flops and p["flops_xla_needed"]:
            assert 1 / 1.15 <= p["flops_ratio"] <= 1.15, (p["name"], p["flops_ratio"])
        if p.get("splash"):
            assert p["mosaic_kernels"] >= 1, p["name"]  # compiled by Mosaic, not Pallas interpret mode
            assert p["splash"]["ratio"] <= 1.1, (p["name"], p["splash"])


def _result(ci_compiles, case, chips):
    code, report, err = ci_compiles[case].result()
    assert code == 0, err[-2000:]
    check_report(report, chips)
    check_work(report)
    return report


@pytest.mark.tpu_compile_ci
@pytest.mark.parametrize("case", ["8b-reads-v5e-8", "8b-reads-v5p-8", "8b-reads-v6e-8"])
def test_llama_8b_reads_32k_and_128k(ci_compiles, case):
    report = _result(ci_compiles, case, {"8b-reads-v5p-8": 4}.get(case, 8))
    assert report["attention"] == "splash"
    assert [p["length"] for p in report["programs"] if p["name"].startswith("prefill_chunk")] == [32768, 131072]


@pytest.mark.tpu_compile_ci
@pytest.mark.parametrize("case", ["8b-decode-v5p-8"])
def test_llama_8b_decode_batch_8_after_a_128k_prompt(ci_compiles, case):
    report = _result(ci_compiles, case, 4)
    assert [p["name"] for p in report["programs"]] == ["prefill_rows[chunk=2048,rows=8,cache=131072]",
                                                       "decode_step[rows=8,cache=131072]"]


@pytest.mark.tpu_compile_ci
@pytest.mark.parametrize("case", ["hybrid-v6e-8"])
def test_qwen3_5_hybrid_reads_32k(ci_compiles, case):
    # splash in the full-attention layers, per shard (the decoder's shard_map): as Mosaic on the mesh
    report = _result(ci_compiles, case, 8)
    assert report["attention"] == "splash"
    assert report["programs"][0]["name"].startswith("prefill_hybrid_chunk")
    assert report["programs"][0]["splash"]["ratio"] <= 1.1


@pytest.mark.tpu_compile_ci
@pytest.mark.parametrize("case", ["moe-v6e-8"])
def test_moe_on_an_expert_mesh(ci_compiles, case):
    report = _result(ci_compiles, case, 8)
    assert report["mesh"] == "expert=8"  # the routed experts as TPU grouped matmuls (ragged_dot), each shard's own pairs
    prefill = report["programs"][0]
    assert prefill["flops_program_loops_counted_once"] == 1  # splash's history loop only: no blocked MoE loop
    assert prefill["mosaic_kernels"] > 2  # splash and the grouped matmuls


@pytest.mark.tpu_compile
def test_qwen3_5_4b_hybrid_reads_and_generates_32k(tmp_path):
    # the 4B's own pattern (three DeltaNet layers to one full-attention layer) and its generation programs
    code, report, err = compile_cli(tmp_path, "v6e-8", "--model", "qwen3.5-hybrid-4b", "--lengths", "32k",
                                    "--new_tokens", "256", "--mesh", "tensor=8", timeout=2400)
    assert code == 0, err[-2000:]
    check_report(report, 8)
    check_work(report)
    assert report["attention"] == "splash"
    assert report["programs"][0]["name"].startswith("prefill_hybrid_chunk")
