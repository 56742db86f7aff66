"""`jaxeval run ... --reference ORIGINAL`: the paired comparison written beside the results, and a
reference that cannot be compared refused before the model loads (the synthetic benchmark)."""

from __future__ import annotations

import json
import sys

import pytest
import synthetic_job

from jaxeval.cli import main
from jaxeval.report.paired import SampleScore
from html_tables import parse_tables


@pytest.fixture
def synthetic(monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)
    benchmark = sys.modules["synthetic_benchmark"].BENCHMARK
    # per-sample scores from the samples file: value, grouped by parity, one length
    monkeypatch.setattr(benchmark, "sample_scores", lambda task, section, samples: None if samples is None else [
        SampleScore(row["key"], f"i {'even' if row['i'] % 2 == 0 else 'odd'}", "8k", row["value"]) for row in samples])

    def run(*flags: str) -> int:
        return main(["run", "--model", "synthetic-model", "--tasks", "synthetic", *flags])
    return run


def _values(folder) -> dict[str, float]:
    (path,) = folder.glob("*.samples_synthetic.jsonl")
    return {row["key"]: row["value"] for row in map(json.loads, path.read_text().splitlines())}


def test_run_with_a_reference_writes_the_comparison_beside_its_results(tmp_path, synthetic, capsys):
    assert synthetic("--output_path", str(tmp_path / "orig"), "--log_samples") == 0
    (reference,) = (tmp_path / "orig").glob("*.json")
    # another batch size: each value depends on its batch's first index, so the runs differ
    assert synthetic("--output_path", str(tmp_path / "mod"), "--log_samples", "--batch_size", "4",
                     "--reference", str(reference), "--bootstrap", "500") == 0
    (results,) = (tmp_path / "mod").glob("*.json")
    page = tmp_path / "mod" / f"{results.stem}.vs-reference" / "index.html"
    assert f"wrote {page}" in capsys.readouterr().out
    ref, mod = _values(tmp_path / "orig"), _values(tmp_path / "mod")
    delta = sum(mod[k] - ref[k] for k in ref) / len(ref)
    assert abs(delta) > 1e-4  # the check can fail: the runs do differ
    rows = parse_tables(page.read_text())["synthetic: paired per-sample deltas per group"]
    assert rows[1][:2] == ["all samples", "48"] and rows[1][4] == f"{delta:.2f}"
    assert [row[0] for row in rows[2:]] == ["i even", "i odd"]
    assert "reference" not in json.loads(results.read_text())["config"]  # not recorded, not hashed


def test_a_reference_that_cannot_be_compared_is_refused_before_the_model_loads(tmp_path, synthetic, capsys,
                                                                                monkeypatch):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema_version": 1, "results": {}, "details": {"longbench": {}},
                                 "config": {"tasks": ["longbench"]}}))
    from jaxeval import cli

    monkeypatch.setattr(cli, "_load", lambda args: pytest.fail("the model loaded"))
    assert synthetic("--output_path", str(tmp_path / "mod"), "--reference", str(other)) == 2
    assert "share no task (modified: synthetic; reference: longbench)" in capsys.readouterr().err
    assert synthetic("--output_path", str(tmp_path / "mod"), "--reference", str(tmp_path / "none.json")) == 2
    assert f"{tmp_path / 'none.json'}: no such results file" in capsys.readouterr().err
    assert synthetic("--output_path", str(tmp_path / "mod"), "--reference", str(other), "--ci", "95") == 2
    assert "--ci must be between 0 and 1" in capsys.readouterr().err
