"""A journal written under the previous run-name layout (every benchmark's flags hashed,
agent_bench's unprefixed) is continued by the first rerun after the upgrade."""

from __future__ import annotations

import json

import synthetic_job

from jaxeval.cli import build_parser, main
from jaxeval.run_flags import run_flags
from jaxeval.run.legacy_journal import old_config_hash


def old_hash(*flags: str) -> str:
    typed = run_flags(build_parser().parse_args(["run", *flags]))
    return old_config_hash(typed.values(), typed.run.task_list())


def test_the_old_layouts_hash_is_reproduced():
    # computed by jaxeval before 8b21ebd (the layout before Benchmark settings) for the same settings:
    # `jaxeval run --data /d --tasks agent_bench` and `... --tasks agent_bench,helmet --helmet_seed 7
    # --limit 2 --sets facts`; a changed default of any benchmark's flag changes them, as it did then
    assert old_hash("--agent_bench_data", "/d", "--tasks", "agent_bench") == "95f2e40faa18c87f"
    assert old_hash("--agent_bench_data", "/d", "--tasks", "agent_bench,helmet", "--helmet_seed", "7",
                    "--limit", "2", "--agent_bench_sets", "facts") == "e8cb7e53465c454b"


def test_a_journal_of_the_old_layout_is_continued(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)
    flags = ["run", "--model", "synthetic-model", "--tasks", "synthetic", "--output_path", str(tmp_path)]
    assert main(flags) == 0
    (journal,) = tmp_path.glob("*.journal.jsonl")
    first = json.loads(next(tmp_path.glob("*.json")).read_text())
    # what the previous version would have left: the same journal under the old hash
    old = old_hash("--model", "synthetic-model", "--tasks", "synthetic")
    header, *entries = journal.read_text().splitlines(keepends=True)
    parsed = json.loads(header)
    parsed["identity"]["config_hash"] = old
    stale = tmp_path / journal.name.replace(first["config_hash"][:8], old[:8])
    stale.write_text(json.dumps(parsed) + "\n" + "".join(entries[:40]))
    journal.unlink()
    capsys.readouterr()

    assert main(flags) == 0
    err = capsys.readouterr().err
    assert f"continuing the journal of the previous run-name layout {stale}" in err
    assert "40 samples already done" in err
    assert not stale.exists() and len(journal.read_text().splitlines()) == 49
    assert json.loads(journal.read_text().splitlines()[0])["identity"]["config_hash"] == first["config_hash"]
    # another run's journal at the old name is left alone
    stale.write_text(json.dumps({**parsed, "identity": {**parsed["identity"], "tasks": ["other"]}}) + "\n")
    journal.unlink()
    assert main(flags) == 0 and stale.exists() and "continuing" not in capsys.readouterr().err
