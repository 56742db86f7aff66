"""Long context the way model cards enable it: config.json fields overridden at load time from
--model_args, the run YAML or load_model(...), recorded in the results and hashed into the run."""

from __future__ import annotations

import json

import pytest
import synthetic_job

from jaxeval.cli import main
from jaxeval.errors import ConfigError
from jaxeval.run.config import parse_model_args

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
MODEL_ARGS = 'rope_scaling={"rope_type":"yarn","factor":4.0,"original_max_position_embeddings":32768},' \
             'max_position_embeddings=131072'


def test_model_args_parse_json_values_with_commas_inside():
    assert parse_model_args(MODEL_ARGS + ",dtype=float32") == {
        "rope_scaling": YARN, "max_position_embeddings": "131072", "dtype": "float32"}
    with pytest.raises(ConfigError, match=r'--model_args: rope_scaling=\{"rope_type":"yarn",\} is not valid JSON'):
        parse_model_args('rope_scaling={"rope_type":"yarn",},dtype=float32')


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)
    return lambda *flags: main(["run", "--model", "synthetic-model", "--tasks", "synthetic", "--limit", "3", *flags])


def _results(folder):
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_overrides_are_recorded_and_hashed_into_the_run(tmp_path, synthetic):
    assert synthetic("--output_path", str(tmp_path / "plain")) == 0
    assert synthetic("--output_path", str(tmp_path / "yarn"), "--model_args", MODEL_ARGS) == 0
    (plain,), (yarn,) = _results(tmp_path / "plain"), _results(tmp_path / "yarn")
    assert plain["config"]["config_overrides"] == {}
    assert yarn["config"]["config_overrides"] == {"rope_scaling": YARN, "max_position_embeddings": 131072}
    assert yarn["config_hash"] != plain["config_hash"] and yarn["run_name"] != plain["run_name"]


def test_the_run_yaml_takes_the_same_keys(tmp_path, synthetic):
    (tmp_path / "run.yaml").write_text(
        "model_args:\n  rope_scaling: {rope_type: yarn, factor: 4.0, original_max_position_embeddings: 32768}\n"
        "  max_position_embeddings: 131072\n")
    assert synthetic("--output_path", str(tmp_path / "a"), "--config", str(tmp_path / "run.yaml")) == 0
    assert synthetic("--output_path", str(tmp_path / "b"), "--model_args", MODEL_ARGS) == 0
    (a,), (b,) = _results(tmp_path / "a"), _results(tmp_path / "b")
    assert a["config"]["config_overrides"] == b["config"]["config_overrides"]
    assert a["config_hash"] == b["config_hash"]


def test_an_unknown_key_is_one_line_naming_the_overridable_fields(tmp_path, synthetic, capsys):
    assert synthetic("--output_path", str(tmp_path), "--model_args", "rope_scailng={}") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key 'rope_scailng'" in err[0] and "rope_scaling" in err[0]
