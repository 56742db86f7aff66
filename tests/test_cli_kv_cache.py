"""`--kv_cache` on the command line: recorded in the results, its own run name, refused where it cannot run."""

from __future__ import annotations

import json

from jaxeval.api import load_model
from jaxeval.cli import EMBEDDED_MODEL, main


def test_a_policy_run_records_it_and_has_a_run_name_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    flags = ["run", "--limit", "1", "--agent_bench_sets", "facts", "--output_path", str(tmp_path)]
    assert main(flags + ["--model_args", "kv_cache=streaming,kv_sinks=2,kv_window=1024"]) == 0
    (path,) = tmp_path.glob("*.json")
    results = json.loads(path.read_text())
    assert results["model"]["kv_cache"] == "streaming:sinks=2,window=1024,positions=original"
    exact = load_model(EMBEDDED_MODEL, "float32", load_tokenizer=False).fingerprint
    assert results["model"]["fingerprint"] != exact
    assert results["run_name"].endswith(results["model"]["fingerprint"][:8])
    assert (results["config"]["kv_cache"], results["config"]["kv_sinks"], results["config"]["kv_window"]) == (
        "streaming", 2, 1024)  # --model_args set the flags


def test_policies_that_cannot_run_are_one_line_errors(tmp_path, capsys):
    base = ["run", "--limit", "1", "--agent_bench_sets", "facts", "--output_path", str(tmp_path)]
    for extra, words in ((["--kv_cache", "int8", "--kv_budget", "64"], "--kv_budget applies to --kv_cache snapkv"),
                         (["--kv_cache", "int4"], "kv_cache='int4' is not a KV-cache policy"),
                         (["--kv_cache", "snapkv"], "teacher-forced reads"),
                         (["--kv_cache", "streaming", "--attention", "splash"], "has a static mask without sinks")):
        assert main(base + extra) == 2, extra
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    assert not list(tmp_path.glob("*.json"))
    assert main(["validate", "--kv_cache", "streaming", "--kv_pool", "avg"]) == 2  # validate refuses what run would
    assert "--kv_pool applies to --kv_cache snapkv" in capsys.readouterr().err
