"""`jaxeval run --tasks longbench_pro` on the embedded model and sample, and the CLI hooks."""

from __future__ import annotations

import json
import pytest

from jaxeval.benchmarks.longbench_pro.benchmark import BENCHMARK, LongBenchProSettings
from jaxeval.benchmarks.registry import run_tasks, scorers
from jaxeval.cli import main


def test_registered_with_its_hooks():
    assert run_tasks()["longbench_pro"] is BENCHMARK and scorers()["longbench_pro"] is BENCHMARK
    assert "T8.3 Long-Context Procedural State Tracking" in BENCHMARK.describe()["longbench_pro"]["configs"]
    assert BENCHMARK.validate("longbench_pro", LongBenchProSettings())[0].startswith("longbench_pro: 33")


@pytest.mark.slow
def test_run_on_the_embedded_model_then_rescore_its_samples(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--tasks", "longbench_pro", "--limit", "1", "--longbench_pro_runs", "2",
                 "--longbench_pro_max_new_tokens", "6", "--longbench_pro_truncation_length", "128",
                 "--longbench_pro_temperature", "1.0", "--output_path", str(out), "--log_samples"]) == 0
    printed = capsys.readouterr().out
    assert "LongBench Pro overall:" in printed
    results = json.loads(next(out.glob("*.json")).read_text())
    details = results["details"]["longbench_pro"]
    assert details["summary"]["total_questions_num"] == 11 and details["summary"]["total_samples_num"] == 22
    assert details["prompting"]["truncated"] == 22  # every sample prompt is longer than 128 tokens
    assert any("not found locally" in d for d in results["deviations"]["longbench_pro"])
    samples = next(out.glob("*.samples_longbench_pro.jsonl"))
    logged = [json.loads(line) for line in samples.read_text().splitlines()]
    assert all(row["key"] == f"longbench_pro/nonthinking/{row['id']}/{row['bon_idx']}" for row in logged)
    # the logged samples re-score to the same per-sample values and summary
    assert main(["score", "--benchmark", "longbench_pro", "--predictions", str(samples),
                 "--output_path", str(tmp_path / "rescored")]) == 0
    rescored = json.loads(next((tmp_path / "rescored").glob("*_jaxeval_results.json")).read_text())
    assert rescored["check"]["differing"] == 0 and rescored["check"]["compared"] == 22
    assert rescored["summary"]["average_overall_metric"] == details["summary"]["average_overall_metric"]
