"""`jaxeval compile TARGET --tasks ...` (the programs a run of those tasks executes) and
`jaxeval run --target TARGET --batch_size auto --mesh auto` (the run sized by that compile)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.aot.test_compile import ROOT, check_report, compile_cli, needs_tpu


def counted(*flags, rows=1):
    from jaxeval.aot import command, workloads
    from jaxeval.cli import build_parser

    args = build_parser().parse_args(["compile", "v5e-1", "--model", "tiny-llama", *flags])
    return workloads.from_tasks(vars(args), args.tasks.split(","), command._config(args), rows)


def test_task_reads_grouped_by_length_bucket_and_head_rows():
    found, summary = counted("--tasks", "agent_bench", "--limit", "1")
    assert summary["agent_bench"]["source"] == "the task's data" and summary["agent_bench"]["reads"] > 0
    assert "tokenizer_proxy" in summary  # a named shape has no tokenizer: said so
    assert all(w.read and not w.new_tokens and w.tasks == ("agent_bench",) for w in found)
    # the embedded sample's 8k split: every read in the 8,192 bucket, one workload per head-row bucket,
    # each at the bucket's longest read (one prefill program for the bucket)
    assert {w.tokens for w in found if w.tokens > 4096} == {max(w.tokens for w in found)}
    from jaxeval.engine.buckets import length_bucket

    keys = [(length_bucket(w.tokens), w.read_positions) for w in found]
    assert len(keys) == len(set(keys))  # one workload per (length bucket, head rows)


def test_task_generations_from_the_benchmarks_planned_counts_without_data(tmp_path):
    found, summary = counted("--tasks", "helmet", "--helmet_data", str(tmp_path / "absent"), "--helmet_lengths", "8k",
                             "--limit", "3", rows=4)
    assert "estimated from the benchmark's item counts" in summary["helmet"]["source"]
    assert found and all(not w.read and w.new_tokens > 0 for w in found)
    assert {w.rows for w in found} <= {1, 2, 4}  # generation batches at most --batch_size, in power-of-two rows
    assert max(w.tokens + w.new_tokens for w in found) <= 8192 + 1  # HELMET cuts prompts to the length less the budget


def test_tasks_and_lengths_together_and_unknown_tasks_are_refused(capsys, compile_environment):
    from jaxeval.cli import main

    assert main(["compile", "v5e-1", "--model", "tiny-llama", "--tasks", "agent_bench", "--lengths", "4k"]) == 2
    assert "--lengths or --tasks, not both" in capsys.readouterr().err
    code = main(["compile", "v5e-1", "--model", "tiny-llama", "--tasks", "nosuchtask"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "unknown task(s) nosuchtask" in err and "agent_bench" in err


@needs_tpu
def test_compile_tasks_compiles_each_program_of_the_run_once(tmp_path):
    code, report, err = compile_cli(tmp_path, "v5e-1", "--model", "tiny-llama", "--tasks", "helmet", "--helmet_data",
                                    str(tmp_path / "absent"), "--helmet_lengths", "8k", "--limit", "2",
                                    "--batch_size", "2", "--attention", "chunked")
    assert code == 0, err[-2000:]
    check_report(report, 1)
    names = [p["name"] for p in report["programs"]]
    assert len(names) == len(set(names))
    assert names[0].startswith("prefill_rows[") and names[-1].startswith("decode_step[rows=2,cache=")
    assert report["tasks"]["helmet"]["generation_batches"] >= 1 and report["programs"][0]["tasks"] == ["helmet"]


@needs_tpu
def test_run_with_a_target_uses_the_batch_and_mesh_that_compile_and_records_them(tmp_path):
    out = tmp_path / "results.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", JAXEVAL_PROGRESS="0")
    proc = subprocess.run([sys.executable, "-m", "jaxeval.cli", "run", "--target", "v5e-1", "--batch_size", "auto:2",
                           "--mesh", "auto", "--tasks", "agent_bench", "--limit", "1", "--agent_bench_sets", "facts",
                           "--out", str(out), "--output_path", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--target v5e-1: batch size 2, mesh 1 device" in proc.stderr
    config = json.loads(out.read_text())["config"]
    choice = config["target_choice"]
    # the tiny model fits a v5e chip at every batch tried (1, 2: auto:2's cap) and one chip has no mesh
    assert choice["batch_size"] == 2 and choice["mesh"] is None and choice["target"] == "v5e-1"
    assert [t["rows"] for t in choice["batch_search"]] == [1, 2] and all(p["fits"] for p in choice["programs"])
    assert config["batch_size"] == 2 and config["mesh"] is None


def test_run_target_needs_something_to_choose(capsys, compile_environment):
    from jaxeval.cli import main

    assert main(["run", "--target", "v5e-8", "--batch_size", "4", "--tasks", "agent_bench"]) == 2
    err = capsys.readouterr().err
    assert "--target v5e-8: give --batch_size auto[:N] and/or --mesh auto" in err
    assert main(["run", "--target", "v9x-8", "--batch_size", "auto", "--tasks", "agent_bench"]) == 2
    assert "unknown target 'v9x-8'" in capsys.readouterr().err
