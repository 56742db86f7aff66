"""`jaxeval compile`: programs compiled for TPU and CUDA targets on this CPU-only machine.

Default tier: the embedded tiny model's shape (2 layers) on v5e-4 and h100, where the compiler
packages are installed (libtpu; jax-cuda12-plugin and -pjrt), else skipped saying which to install.
The `tpu_compile` tier (by hand: python -m pytest -q -m tpu_compile tests/aot) compiles the 8B,
hybrid and MoE shapes of docs/compile.md."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_TPU = importlib.util.find_spec("libtpu") is not None
def _cuda_installed() -> bool:
    from jaxeval.aot.targets import TARGETS, installed

    return installed(TARGETS["h100"])


HAS_CUDA = _cuda_installed()
needs_tpu = pytest.mark.skipif(not HAS_TPU, reason="libtpu not installed (pip install 'jax[tpu]==0.10.2')")
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="jax-cuda12-plugin / jax-cuda12-pjrt 0.10.2 not installed")


def compile_cli(tmp_path, *args, timeout=1200):
    """`jaxeval compile ...` in a fresh process (its backends start on the CPU) -> (exit code, report, stderr)."""
    return compile_cli_timed(tmp_path, *args, timeout=timeout)[:3]


def compile_cli_timed(tmp_path, *args, timeout=1200):
    """compile_cli -> (exit code, report, stderr, CPU seconds of that process alone, os.wait4's)."""
    import threading

    out, log = tmp_path / "report.json", tmp_path / "stderr.txt"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "jaxeval.cli", "compile", *args, "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    report = json.loads(out.read_text()) if out.is_file() else None
    return proc.returncode, report, log.read_text(), usage.ru_utime + usage.ru_stime


def check_report(report, chips):
    assert report["chips"] == chips and report["programs"]
    for p in report["programs"]:
        assert p["compiled"] and p["fits"] and p["error"] is None, p
        held = p["holds"]["weights"] + p["holds"]["kv_cache"]
        assert p["peak_bytes_per_chip"] >= held, p  # the chip holds at least its weights and cache
        assert p["peak_bytes_per_chip"] <= report["hbm_bytes_per_chip"]


@needs_tpu
def test_tiny_read_compiles_for_v5e_4_with_splash_as_mosaic(tmp_path):
    code, report, err = compile_cli(tmp_path, "v5e-4", "--model", "tiny-llama", "--lengths", "1k",
                                    "--prefill_chunk", "256", "--batch_size", "2")
    assert code == 0, err
    check_report(report, 4)
    assert report["mesh"] == "tensor=4" and report["attention"] == "splash"
    prefill = report["programs"][0]
    assert prefill["name"].startswith("prefill_chunk[rows=2,chunk=256,bucket=1024]")
    assert prefill["mosaic_kernels"] >= 2  # diagonal and history calls: tpu_custom_call, not interpret mode
    splash = prefill["splash"]
    assert splash["executed_blocks"] <= 1.1 * splash["causal_minimum_blocks"]  # 4 chunks: history blocks skipped
    assert prefill["time"]["total_s"] > 0 and prefill["time"]["mosaic_s"] > 0
    assert [p["name"].split("[")[0] for p in report["programs"]] == ["prefill_chunk", "gather_rows", "read_head"]


TINY_HYBRID = dict(model_type="qwen3_5_text", vocab_size=256, hidden_size=128, intermediate_size=256,
                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2, head_dim=128,
                   linear_num_key_heads=4, linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32,
                   linear_conv_kernel_dim=4, layer_types=["linear_attention", "full_attention"] * 2,
                   max_position_embeddings=4096, eos_token_id=2,
                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})


@needs_tpu
def test_hybrid_with_splash_compiles_on_a_mesh_as_mosaic(tmp_path):
    # the hybrid's full-attention layers run splash per shard (the decoder's shard_map); XLA partitioning it
    # failed: "Mosaic kernels cannot be automatically partitioned"
    (tmp_path / "config.json").write_text(json.dumps(TINY_HYBRID))
    code, report, err = compile_cli(tmp_path, "v5e-4", "--model", str(tmp_path), "--lengths", "512",
                                    "--prefill_chunk", "256", "--mesh", "data=2,tensor=2", "--new_tokens", "8")
    assert code == 0, err[-2000:]
    check_report(report, 4)
    prefill = report["programs"][0]
    assert prefill["name"].startswith("prefill_hybrid_chunk") and prefill["mosaic_kernels"] >= 2
    assert prefill["splash"]["ratio"] <= 1.1
    assert report["programs"][3]["name"].startswith("prefill_hybrid_row") and report["programs"][3]["mosaic_kernels"] >= 1


@needs_cuda
def test_tiny_read_and_decode_compile_for_h100(tmp_path):
    code, report, err = compile_cli(tmp_path, "h100", "--model", "tiny-llama", "--lengths", "512",
                                    "--prefill_chunk", "256", "--new_tokens", "8")
    assert code == 0, err
    check_report(report, 1)
    assert report["attention"] == "chunked" and "autotuned" in report["notes"][0]
    assert [p["name"].split("[")[0] for p in report["programs"]][-1] == "decode_step"


@needs_tpu
def test_a_program_too_large_exits_2_naming_it(tmp_path):
    config = json.loads((ROOT / "jaxeval/assets/tiny_llama/config.json").read_text())
    config["intermediate_size"] = 4 * 2 ** 20  # 2 layers x 3 x 256 x 4M x 2 bytes: 12 GiB of MLP on one v5e chip
    config["num_hidden_layers"] = 3
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, report, err = compile_cli(tmp_path, "v5e-1", "--model", str(tmp_path), "--lengths", "512",
                                    "--prefill_chunk", "256")
    assert code == 2
    line = err.strip().splitlines()[-1]
    assert line.startswith("compile: prefill_chunk[rows=1") and "v5e-1 has 15.75 GiB per chip" in line, line
    assert not report["fits"]


def test_unknown_target_lists_the_known_ones(capsys):
    from jaxeval.cli import main

    assert main(["compile", "v9x-8", "--model", "tiny-llama"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown target 'v9x-8'" in err and "v5e-8" in err and "h100x8" in err


def test_missing_compiler_package_says_which(monkeypatch, capsys, compile_environment):
    from jaxeval.aot import targets
    from jaxeval.cli import main

    monkeypatch.setattr(targets, "installed", lambda t: False)
    assert main(["compile", "v6e-8", "--model", "tiny-llama"]) == 2
    assert "needs libtpu==0.0.42.*" in capsys.readouterr().err
    assert main(["compile", "h200", "--model", "tiny-llama"]) == 2
    assert "needs jax-cuda12-plugin==0.10.2" in capsys.readouterr().err


def test_lengths_parse_and_refuse():
    from jaxeval.aot.command import parse_lengths
    from jaxeval.errors import ConfigError

    assert parse_lengths("32k, 128k,4096") == [32768, 131072, 4096]
    with pytest.raises(ConfigError, match="'abc' is not a token count"):
        parse_lengths("abc")


def test_batch_search_doubles_until_a_batch_does_not_fit(monkeypatch):
    from jaxeval.aot import command
    from jaxeval.aot.targets import TARGETS
    from jaxeval.aot.workloads import from_lengths
    from jaxeval.errors import ConfigError

    asked = []

    def fits(config, abstract, dtype, args, workloads, rows, backend, t):
        asked.append(rows)
        return rows <= limit

    monkeypatch.setattr(command, "_fits_at", fits)
    read = from_lengths([32768], 1, 8, 0)
    limit = 4
    assert command._largest_batch(None, None, None, None, read, "splash", TARGETS["v5e-8"]) == \
        (4, [{"rows": 1, "fits": True}, {"rows": 2, "fits": True}, {"rows": 4, "fits": True},
             {"rows": 8, "fits": False}])
    limit, asked[:] = 1000, []
    assert command._largest_batch(None, None, None, None, read, "splash", TARGETS["v5e-8"])[0] == command.AUTO_CAP
    assert asked[-1] == command.AUTO_CAP
    asked[:] = []  # auto:N stops at N
    assert command._largest_batch(None, None, None, None, read, "splash", TARGETS["v5e-8"], cap=16)[0] == 16
    assert asked == [1, 2, 4, 8, 16]
    limit = 0
    with pytest.raises(ConfigError, match="not even one sequence of 32768 tokens fits v5e-8"):
        command._largest_batch(None, None, None, None, read, "splash", TARGETS["v5e-8"])


def test_compile_takes_the_run_model_flags_with_its_overrides():
    # one declaration (jaxeval.options.model.ModelOptions): compile's model flags are the run's, with
    # its own defaults and choices given as overrides
    import argparse
    import dataclasses

    from jaxeval.aot import command
    from jaxeval.options.model import ATTENTION, ModelOptions

    p = argparse.ArgumentParser()
    command.add_arguments(p)
    actions = {a.dest: a for a in p._actions}
    declared = {f.name: f for f in dataclasses.fields(ModelOptions)}
    for name in command.COMPILE_FLAGS:
        assert actions[name].option_strings == [f"--{name}"], name
    assert actions["prefill_chunk"].default == ModelOptions.prefill_chunk
    assert actions["prefill_chunk"].help == declared["prefill_chunk"].metadata["help"]
    assert actions["attention"].choices == ATTENTION and actions["attention"].default is None
    assert actions["dtype"].choices == ("float32", "bfloat16") and actions["dtype"].default == "bfloat16"
    assert actions["kv_cache"].choices == ("exact", "int8", "fp8") and actions["kv_cache"].metavar is None
    assert actions["model"].required and actions["mesh"].default is None
    args = p.parse_args(["v5e-8", "--model", "tiny-llama", "--kv_cache", "int8", "--prefill_chunk", "512"])
    assert (args.kv_cache, args.prefill_chunk, args.programs) == ("int8", 512, "all")
    with pytest.raises(SystemExit):
        p.parse_args(["v5e-8", "--model", "tiny-llama", "--kv_cache", "snapkv"])


def test_programs_generate_needs_new_tokens(capsys, compile_environment):
    from jaxeval.cli import main

    assert main(["compile", "v5e-8", "--model", "tiny-llama", "--programs", "generate"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--programs generate needs --new_tokens" in err


def test_auto_mesh_keeps_tensor_within_a_slice():
    # 2xv5e-8: tensor=16 put half of each head group's all-reduce over the DCN (and did not fit the 8B's
    # 128k read); the slices go on the outermost axis, a slice's mesh inside
    from jaxeval.aot.command import _mesh_candidates
    from jaxeval.aot.shapes import named_config
    from jaxeval.aot.targets import TARGETS

    llama = named_config("llama-3.1-8b")
    assert _mesh_candidates(None, TARGETS["2xv5e-8"], llama)[:3] == ["data=2,tensor=8", "fsdp=2,tensor=8",
                                                                     "tensor=16"]
    assert _mesh_candidates(None, TARGETS["v5e-8"], llama) == ["tensor=8", "fsdp=8"]
    assert _mesh_candidates(None, TARGETS["2xv5e-8"], named_config("qwen3.5-hybrid-4b"))[0] == "data=2,tensor=8"
