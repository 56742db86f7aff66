"""`jaxeval ls`, `jaxeval validate` and a resumed real run (embedded model, agent_bench)."""

import json

from jaxeval.cli import RUN_CONFIGS, main
from jaxeval.run.schema import strip_volatile


def test_ls_lists_tasks_configs_and_lengths(capsys):
    assert main(["ls"]) == 0
    printed = capsys.readouterr().out
    assert "agent_bench: longctx-agent-bench" in printed
    assert "configs: facts, tool_calls, rules_en, rules_cs, rules_de" in printed and "lengths: 8k, 32k" in printed
    assert "longbench_e:" in printed and "0-4k, 4-8k, 8k+" in printed
    assert "suites/smoke.yaml" in printed


def test_validate_checks_model_tokenizer_and_every_record_of_a_shipped_config(capsys):
    assert main(["validate", "--config", str(RUN_CONFIGS / "suites" / "smoke.yaml")]) == 0
    printed = capsys.readouterr().out
    assert "config.json valid (llama)" in printed and "tokenizer present" in printed
    assert "agent_bench rules_de/8k:" in printed and "longbench_e qasper:" in printed
    assert printed.strip().endswith("valid")


def test_validate_bad_data_is_one_line_naming_it(tmp_path, capsys):
    assert main(["validate", "--agent_bench_data", str(tmp_path / "missing"), "--agent_bench_sets", "facts"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(tmp_path / "missing") in err


def test_validate_model_without_config_is_one_line(tmp_path, capsys):
    (tmp_path / "m").mkdir()
    assert main(["validate", "--model", str(tmp_path / "m")]) == 2
    assert "config.json" in capsys.readouterr().err


def test_real_run_resumes_from_a_damaged_journal_to_identical_results(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    flags = ["run", "--limit", "1", "--agent_bench_sets", "facts,rules_en", "--output_path", str(tmp_path), "--log_samples"]
    assert main(flags) == 0
    (results,) = tmp_path.glob("*.json")
    (journal,) = tmp_path.glob("*.journal.jsonl")
    first = json.loads(results.read_text())
    assert first["timing"]["compiles"]["prefill_chunk"] >= 1  # executables per engine entry point
    lines = journal.read_text().splitlines(keepends=True)
    assert [json.loads(line)["key"] for line in lines[1:]] == [
        "agent_bench/facts/8k/facts-8k-000/0", "agent_bench/rules/rules_en/8k/all/0"]
    journal.write_text(lines[0] + lines[2] + lines[1][:25])  # the facts read torn, as a SIGKILL leaves it
    assert main(flags) == 0
    second = json.loads(results.read_text())
    assert second["timing"]["resumed_records"] == 1
    assert json.dumps(strip_volatile(second)) == json.dumps(strip_volatile(first))
    assert len(journal.read_text().splitlines()) == 3  # no key twice
