"""A fractional --limit on LongBench Pro: each primary task's share, rounded up; n-samples filled."""

from collections import Counter

import jaxeval.benchmarks.longbench_pro.runner as runner
from jaxeval.benchmarks.longbench_pro.data import load_records
from jaxeval.benchmarks.registry import run_tasks

from conftest import FakeSemSim, ScriptedBackend


def test_fraction_of_each_primary_task_and_original_counts(tiny_tokenizer, monkeypatch):
    records = load_records()
    per_task = Counter(r.primary_task for r in records)
    assert set(per_task.values()) == {3}
    chosen = runner.select_records(records, 0.4)  # ceil(1.2) = 2 of each
    assert Counter(r.primary_task for r in chosen) == {task: 2 for task in per_task}
    monkeypatch.setattr(runner, "load_semsim", lambda settings: (FakeSemSim(0.5), {"model": "fake"}))
    result = runner.run_longbench_pro(ScriptedBackend(tiny_tokenizer, lambda p, s: "[Answer]\nA"), runs=1,
                                      limit=0.1, truncation_length=100_000, max_new_tokens=8)
    summary = run_tasks()["longbench_pro"].summarize("longbench_pro", result)
    assert summary["n-samples"]["longbench_pro"] == {"original": len(records), "effective": len(per_task)}


def test_score_stderr_over_the_questions(tiny_tokenizer, monkeypatch):
    import math
    import statistics

    import pytest

    monkeypatch.setattr(runner, "load_semsim", lambda settings: (FakeSemSim(0.5), {"model": "fake"}))
    replies = {0: "[Answer]\nA", 1: "[Answer]\nB"}  # the two runs answer apart: question means vary
    result = runner.run_longbench_pro(ScriptedBackend(tiny_tokenizer, lambda p, seed: replies[seed % 2]), runs=2,
                                      limit=1, truncation_length=100_000, max_new_tokens=8)
    by_question = {}
    for row in result["samples"]:
        by_question.setdefault(row["id"], []).append(row["metric"])
    means = [statistics.mean(v) for v in by_question.values()]
    summary = run_tasks()["longbench_pro"].summarize("longbench_pro", result)["results"]["longbench_pro"]
    assert summary["score"] == pytest.approx(statistics.mean(means))
    assert summary["score_stderr"] == pytest.approx(statistics.stdev(means) / math.sqrt(len(means)))


def test_sample_rows_hold_the_prompt_hash_length_target_and_raw_output(tiny_tokenizer, monkeypatch):
    import hashlib

    monkeypatch.setattr(runner, "load_semsim", lambda settings: (FakeSemSim(0.5), {"model": "fake"}))
    seen = {}

    def reply(prompt, seed):
        seen.setdefault("ids", prompt)
        return "<think>hm</think>[Answer]\nA"

    result = runner.run_longbench_pro(ScriptedBackend(tiny_tokenizer, reply), runs=1, limit=0.1, mode="thinking",
                                      truncation_length=100_000, max_new_tokens=8, log_prompts=True)
    row = result["sample_log"][0]
    prompt = tiny_tokenizer.decode(list(seen["ids"]), skip_special_tokens=False)
    assert row["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    assert row["prompt_tokens"] == len(seen["ids"]) and row["prompt"] == prompt
    assert row["raw_output"].startswith("<think>hm</think>") and row["target"] == row["answer"]
    assert "prompt" not in result["samples"][0]


def test_score_writes_a_new_folder_beside_the_predictions_by_default(tmp_path, capsys):
    import json as json_module

    from jaxeval.cli import main

    rows = [{"id": "q1", "bon_idx": 1, "secondary_task": "T3.2 Single-Hop Fact QA", "primary_task":
             "T3. Evidence-Grounded QA", "language": "English", "token_length": "8k", "difficulty": "Easy",
             "contextual_requirement": "Partial", "answer": ["A"], "prediction": "A"}]
    folder = tmp_path / "preds"
    folder.mkdir()
    path = folder / "nonthinking_context-120000_bon-1_inference_1-of-1.jsonl"
    path.write_text("".join(json_module.dumps(row) + "\n" for row in rows))
    before = path.read_bytes()
    assert main(["score", "--benchmark", "longbench_pro", "--predictions", str(path)]) == 0
    out = folder / f"{path.stem}_rescored"  # a new folder beside the file; nothing written among the predictions
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, out.name]) and path.read_bytes() == before
    assert (out / "nonthinking_context-120000_bon-1_jaxeval_summary.json").is_file()
    assert str(out) in capsys.readouterr().out
