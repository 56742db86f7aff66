"""configs/example.yaml, the run config users copy: it validates and runs as shipped (embedded
model and sample, --limit 1: ~10 s, the one real run of a shipped config), and every key it
shows commented out is a real `jaxeval run` key."""

from __future__ import annotations

import json
import re

from jaxeval.cli import RUN_CONFIGS, build_parser, main
from jaxeval.run.config import load_yaml_config

EXAMPLE = RUN_CONFIGS / "example.yaml"


def test_the_example_config_validates_and_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    assert main(["validate", "--config", str(EXAMPLE)]) == 0
    assert "agent_bench tool_calls/8k:" in capsys.readouterr().out
    out = tmp_path / "results"
    assert main(["run", "--config", str(EXAMPLE), "--limit", "1", "--output_path", str(out)]) == 0
    (results,) = out.glob("*.json")
    written = json.loads(results.read_text())
    assert written["config"]["agent_bench_sets"] == "facts,tool_calls" and written["config"]["limit"] == 1
    assert set(written["results"]) == {"agent_bench/facts/8k", "agent_bench/tool_calls/8k"}
    assert len(list(out.glob("*.samples_agent_bench.jsonl"))) == 1  # log_samples: true
    assert main(["ls"]) == 0 and "example.yaml" in capsys.readouterr().out


def test_every_key_the_example_shows_is_a_run_flag(tmp_path):
    text = EXAMPLE.read_text()
    shown = re.sub(r"^# (\w+:)", r"\1", text, flags=re.M)  # the commented-out keys, switched on
    shown = re.sub(r"^#   (\w+:)", r"  \1", shown, flags=re.M)  # and model_args' nested lines
    (tmp_path / "all.yaml").write_text(shown)
    run = next(a for a in build_parser()._actions if a.dest == "command").choices["run"]
    values = load_yaml_config(str(tmp_path / "all.yaml"), {a.dest: a for a in run._actions})
    assert {"model", "mesh", "model_args", "helmet_judge", "longbench_pro_mode", "judge_timeout"} <= set(values)
    assert values["model_args"].startswith("rope_scaling={")
