"""`jaxeval plan` for mrcr and longbench_v2_loglik: the counts equal what the run reads and prompts."""

import json

import pytest

from jaxeval.cli import main

RUN = ["--tasks", "mrcr,longbench_v2_loglik", "--limit", "1", "--mrcr_needles", "2", "--mrcr_max_new_tokens", "4"]


@pytest.mark.slow
def test_plan_counts_mrcr_and_longbench_v2_loglik(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    assert main(["plan", *RUN, "--calibrate", "matmul", "--plan_json", str(tmp_path / "plan.json")]) == 0
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert main(["run", *RUN, "--output_path", str(tmp_path / "out"), "--log_samples"]) == 0
    capsys.readouterr()
    (results_file,) = (tmp_path / "out").glob("*.json")
    results = json.loads(results_file.read_text())
    assert results["timing"]["tokens_read"] == plan["totals"]["tokens_read"] > 0  # the loglik reads, exactly
    mrcr = [json.loads(line) for line in next((tmp_path / "out").glob("*.samples_mrcr.jsonl")).read_text().splitlines()]
    counted = plan["tokens"]["mrcr"]
    assert sum(b["prompt_tokens"] for b in counted.values()) == sum(row["prompt_tokens"] for row in mrcr)
    assert sum(b["generated_tokens_max"] for b in counted.values()) == 4 * len(mrcr)
