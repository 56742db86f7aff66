"""A run's name (its config hash, hence its journal) covers the model, the shared settings and
the settings of its own tasks' benchmarks only: another benchmark's flag, or a setting added to
another benchmark by an upgrade, never orphans a journal."""

from __future__ import annotations

import dataclasses

import synthetic_job

from jaxeval.benchmarks.helmet.benchmark import BENCHMARK as HELMET
from jaxeval.benchmarks.registry import run_tasks
from jaxeval.benchmarks.settings import setting
from jaxeval.cli import build_parser, main
from jaxeval.run_flags import run_flags
from jaxeval.run.config import config_hash, not_hashed_keys, recorded_config


def run_hash(*flags: str) -> str:
    typed = run_flags(build_parser().parse_args(["run", *flags]))
    tasks = typed.run.task_list()
    return config_hash(recorded_config(typed, tasks, run_tasks()), not_hashed_keys(typed, tasks, run_tasks()))


def test_another_benchmarks_flags_do_not_rename_an_agent_bench_run():
    base = run_hash("--tasks", "agent_bench")
    assert run_hash("--tasks", "agent_bench", "--helmet_seed", "7") == base
    assert run_hash("--tasks", "agent_bench", "--longbench_pro_runs", "2", "--longbench_data", "x") == base
    assert run_hash("--tasks", "agent_bench", "--agent_bench_save_scores", "s.json.gz") == base  # not hashed
    assert run_hash("--tasks", "agent_bench", "--agent_bench_sets", "facts") != base  # its own setting
    assert run_hash("--tasks", "agent_bench", "--limit", "2") != base  # a shared one
    assert run_hash("--tasks", "agent_bench,helmet", "--helmet_seed", "7") != run_hash("--tasks", "agent_bench,helmet")


def test_deprecated_agent_bench_spellings_name_the_same_run(capsys):
    assert run_hash("--sets", "facts", "--lengths", "8k") == run_hash("--agent_bench_sets", "facts")
    err = capsys.readouterr().err.splitlines()
    assert err == ["jaxeval: warning: --sets is deprecated; use --agent_bench_sets (same meaning)",
                   "jaxeval: warning: --lengths is deprecated; use --agent_bench_lengths (same meaning)"]


def test_a_journal_written_before_an_unrelated_setting_was_added_still_resumes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)
    flags = ["run", "--model", "synthetic-model", "--tasks", "synthetic", "--output_path", str(tmp_path)]
    before = run_hash("--tasks", "agent_bench")
    assert main(flags) == 0
    (journal,) = tmp_path.glob("*.journal.jsonl")
    capsys.readouterr()

    upgraded = dataclasses.make_dataclass("HelmetSettings", [("new_knob", int, setting(3, "a later setting"))],
                                          bases=(HELMET.Settings,), frozen=True)
    monkeypatch.setattr(HELMET, "Settings", upgraded)  # `pip install -U` brought a new HELMET flag
    assert run_hash("--tasks", "agent_bench") == before
    assert main([*flags, "--helmet_new_knob", "9", "--helmet_seed", "1"]) == 0
    assert "48 samples already done" in capsys.readouterr().err
    assert list(tmp_path.glob("*.journal.jsonl")) == [journal]
