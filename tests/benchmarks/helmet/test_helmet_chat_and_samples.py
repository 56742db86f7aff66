"""HELMET's chat-mode datasets with a tokenizer lacking a chat template (refused before any
compute, or prompted as completions when asked), the judge reply limit recorded, and the
per-sample log of --log_samples."""

from __future__ import annotations

import json
import shutil

from helmet_helpers import SAMPLE, TINY, FakeJudge, FakeModel

from jaxeval.benchmarks.helmet.runner import judge_dataset, run_helmet
from jaxeval.benchmarks.helmet.summary import summarize
from jaxeval.benchmarks.helmet.tasks import helmet_units
from jaxeval.cli import main


def _without_chat_template(tmp_path):
    model = tmp_path / "base"
    shutil.copytree(TINY, model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    assert config.pop("chat_template")
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    return model


def test_a_base_model_is_refused_before_any_compute_unless_chat_templates_are_off(tmp_path, capsys):
    model = _without_chat_template(tmp_path)
    out = tmp_path / "out"
    for command in ("validate", "run"):
        assert main([command, "--tasks", "helmet", "--model", str(model), "--output_path", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "no chat template" in err and "narrativeqa_7892" in err
        assert "--helmet_no_chat_template" in err and "kilt_nq" not in err  # completion-mode datasets need none
    assert not list(out.glob("*.journal.jsonl"))  # stopped before the journal, before any sample
    assert main(["validate", "--tasks", "helmet", "--model", str(model), "--helmet_no_chat_template"]) == 0
    assert "no chat template (none needed)" in capsys.readouterr().out


def test_chat_templates_off_prompt_every_dataset_as_a_completion(tokenizer):
    from jaxeval.benchmarks.helmet.benchmark import HelmetSettings, helmet_task_units

    units, _ = helmet_task_units(HelmetSettings(categories="longqa", no_chat_template=True), agenticlu=False)
    assert units and not any(unit.use_chat_template for unit in units)
    result = run_helmet(FakeModel(tokenizer, " x"), units, SAMPLE, limit=1)
    assert summarize("helmet", result)["chat_template"] == "completion"


class LimitedJudge(FakeJudge):
    max_tokens = 4096  # HELMET's judge setting; the LongQA pass caps its requests at 2048


def test_the_reply_limit_actually_sent_is_recorded():
    records = [{"question": "Who?", "answer": ["Ada"], "output": "Ada"}]
    judge = LimitedJudge(lambda prompt: '{"fluency": 1, "correctness": 2}')
    summaries, _, _ = judge_dataset("narrativeqa_7892", records, judge)
    assert summaries["gpt4_score"]["max_tokens_sent"] == 2048
    summ = [{"output": "A summary.", "keypoints": ["k"], "expert_summary": "E."}]
    summaries, _, _ = judge_dataset("infbench_sum_eng", summ, LimitedJudge(lambda p: "{}"))
    assert summaries["gpt4_f1"]["max_tokens_sent"] == 4096


def test_every_generated_sample_is_logged_with_its_journal_key(tokenizer):
    units = helmet_units(("recall", "longqa"), ["8k"])
    result = run_helmet(FakeModel(tokenizer, " x"), units, SAMPLE, limit=2)
    logged = result["sample_log"]
    assert len(logged) == sum(len(records) for records in result["outputs"].values())
    assert len({s["key"] for s in logged}) == len(logged)
    assert all(s["key"].startswith(f"helmet/{s['unit']}/") and "output" in s for s in logged)
    assert {s["unit"] for s in logged} == set(result["outputs"])
