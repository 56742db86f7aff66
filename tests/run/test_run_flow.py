"""`jaxeval run`'s flow on the synthetic benchmark (fast, model-free): results layout, run name,
journal reuse and refusal, --config YAML, --model_args, fsspec output paths."""

from __future__ import annotations

import json

import fsspec
import pytest
import synthetic_job

from jaxeval.cli import main
from jaxeval.run.schema import SCHEMA_VERSION, VOLATILE_FIELDS, strip_volatile


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)

    def run(*flags: str) -> int:
        return main(["run", "--model", "synthetic-model", "--tasks", "synthetic", *flags])
    return run


def _only(folder, pattern: str):
    (path,) = folder.glob(pattern)
    return path


def test_results_follow_the_schema_and_a_rerun_resumes_everything(tmp_path, synthetic, capsys):
    assert synthetic("--output_path", str(tmp_path), "--log_samples") == 0
    first = json.loads(_only(tmp_path, "*.json").read_text())
    assert first["schema_version"] == SCHEMA_VERSION
    assert list(first)[:3] == ["schema_version", "results", "groups"] and set(VOLATILE_FIELDS) <= set(first)
    assert first["results"]["synthetic/main"]["mean"] == first["details"]["synthetic"]["mean"]
    assert "sample_log" not in first["details"]["synthetic"]  # they go to the samples file
    assert first["group_subtasks"] == {"synthetic": ["synthetic/main"]}
    assert first["config"]["batch_size"] == 8 and first["config"]["tasks"] == ["synthetic"]
    assert first["run_name"] == f"synthetic-model-synthetic-{first['config_hash'][:8]}-{'f' * 8}"
    samples = _only(tmp_path, "*.samples_synthetic.jsonl").read_text().splitlines()
    assert len(samples) == 48 and json.loads(samples[0])["task"] == "synthetic"
    assert synthetic("--output_path", str(tmp_path)) == 0  # same command: same run name, all resumed
    assert "48 samples already done" in capsys.readouterr().err
    second = json.loads(_only(tmp_path, "*.json").read_text())
    assert second["timing"]["resumed_records"] == 48
    assert strip_volatile(second)["config"]["log_samples"] is False
    assert {k: v for k, v in strip_volatile(second).items() if k != "config"} == \
        {k: v for k, v in strip_volatile(first).items() if k != "config"}


def test_other_settings_get_another_run_and_batch_size_does_not(tmp_path, synthetic):
    assert synthetic("--output_path", str(tmp_path), "--limit", "5") == 0
    assert synthetic("--output_path", str(tmp_path), "--limit", "5", "--batch_size", "2") == 0
    assert synthetic("--output_path", str(tmp_path), "--limit", "6") == 0
    assert len(list(tmp_path.glob("*.journal.jsonl"))) == 2


def test_another_model_in_a_folder_of_the_same_name_gets_a_run_of_its_own(tmp_path, synthetic, monkeypatch):
    assert synthetic("--output_path", str(tmp_path)) == 0
    monkeypatch.setattr(synthetic_job.FakeModel, "fingerprint", "0" * 16)  # same path, new weights
    assert synthetic("--output_path", str(tmp_path)) == 0
    runs = sorted(json.loads(path.read_text())["model"]["fingerprint"] for path in tmp_path.glob("*.json"))
    assert runs == ["0" * 16, "f" * 16] and len(list(tmp_path.glob("*.journal.jsonl"))) == 2
    assert json.loads(_only(tmp_path, "*-00000000.json").read_text())["timing"]["resumed_records"] == 0


def test_config_yaml_mirrors_flags_and_flags_win(tmp_path, synthetic):
    config = tmp_path / "run.yaml"
    config.write_text(f"output_path: {tmp_path / 'out'}\nbatch_size: 5\nlimit: 7\nlog_samples: true\n"
                      "model_args: {prefill_chunk: 512}\n")
    assert synthetic("--config", str(config), "--batch_size", "3") == 0
    results = json.loads(_only(tmp_path / "out", "*.json").read_text())
    assert results["config"]["batch_size"] == 3  # the flag
    assert results["config"]["limit"] == 7 and results["config"]["log_samples"] is True  # the file
    assert results["config"]["prefill_chunk"] == 512 and results["config"]["model_args"] == {"prefill_chunk": "512"}


def test_config_yaml_unknown_key_names_file_and_key(tmp_path, synthetic, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("batch_sise: 5\n")
    assert synthetic("--config", str(config)) == 2
    err = capsys.readouterr().err
    assert str(config) in err and "'batch_sise'" in err


@pytest.mark.parametrize("model_args, message", [
    ("dtype=float16", "not one of"), ("colour=red", "unknown key 'colour'"), ("dtype", "not key=value")])
def test_bad_model_args_are_one_line(tmp_path, synthetic, capsys, model_args, message):
    assert synthetic("--output_path", str(tmp_path), "--model_args", model_args) == 2
    assert message in capsys.readouterr().err


def test_memory_filesystem_output_path_holds_journal_results_and_samples(synthetic):
    url = "memory://jaxeval-test/runs"
    assert synthetic("--output_path", url, "--log_samples") == 0
    fs = fsspec.filesystem("memory")
    names = sorted(path.rsplit("/", 1)[-1] for path in fs.ls("/jaxeval-test/runs", detail=False))
    assert [n.split(".", 1)[1] for n in names] == ["journal.jsonl", "json", "samples_synthetic.jsonl"]
    assert synthetic("--output_path", url) == 0
    with fs.open(f"/jaxeval-test/runs/{names[1]}") as f:
        assert json.load(f)["timing"]["resumed_records"] == 48
    fs.rm("/jaxeval-test", recursive=True)


def test_bad_numbers_from_the_config_file_are_named(tmp_path, synthetic, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("limit: many\n")
    assert synthetic("--config", str(config)) == 2
    assert f"{config}: limit: expected an integer or a fraction, got 'many'" in capsys.readouterr().err
    config.write_text("limit: -3\nhost_split: sometimes\n")
    assert synthetic("--config", str(config)) == 2
    assert f"{config}: host_split: 'sometimes' is not one of auto, on, off" in capsys.readouterr().err
    config.write_text("limit: -3\n")
    assert synthetic("--config", str(config)) == 2
    assert f"--limit must be a positive integer or a fraction between 0 and 1, got -3 (from {config})" \
        in capsys.readouterr().err
    config.write_text("limit: 1.5\n")
    assert synthetic("--config", str(config)) == 2
    assert "--limit must be a positive integer or a fraction between 0 and 1, got 1.5" in capsys.readouterr().err
    assert synthetic("--batch_size", "0") == 2
    assert "--batch_size must be a positive integer, got 0" in capsys.readouterr().err


def test_a_run_with_missing_judgements_writes_its_results_then_exits_3(tmp_path, synthetic, monkeypatch, capsys):
    """--judge_max_failures (jaxeval/judges/options.py): the rule applies to any task reporting "judged"."""
    def judged_task(ctx, settings):
        result, table = run_task(ctx, settings)
        result["judged"] = {"judgements": 48, "missing": 3, "missing_by_kind": {"timeout": 3}}
        return result, table
    run_task = synthetic_job.run_task
    monkeypatch.setattr(synthetic_job, "run_task", judged_task)
    assert synthetic("--output_path", str(tmp_path)) == 3
    assert "synthetic: 3 of 48 judgements missing (timeout 3)" in capsys.readouterr().err
    assert json.loads(_only(tmp_path, "*.json").read_text())["details"]["synthetic"]["judged"]["missing"] == 3
    assert synthetic("--output_path", str(tmp_path), "--judge_max_failures", "0.1") == 0
