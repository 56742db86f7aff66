"""`jaxeval score --benchmark longbench_pro`: official inference / evaluation files and jaxeval samples."""

from __future__ import annotations

import json

import pytest

import jaxeval.benchmarks.longbench_pro.rescore as rescore
from jaxeval.benchmarks.longbench_pro.rescore import rescore_predictions
from jaxeval.cli import main
from jaxeval.errors import DataError

from conftest import FakeSemSim

LABELS = {"language": "English", "token_length": "8k", "contextual_requirement": "Partial", "difficulty": "Easy"}


def official_row(qid, run, secondary, primary, answer, prediction, **extra):
    return {"id": qid, "context": "...", "primary_task": primary, "secondary_task": secondary, **LABELS,
            "question_nonthinking": "q", "question_thinking": "qt", "answer": answer, "prediction": prediction,
            "reasoning_content": None, "bon_idx": run, **extra}


ROWS = [
    official_row("q1", 1, "T2.2 Local Causal Chain Sorting", "T2. Sequencing & Structure Reconstruction",
                 ["a", "b", "c", "d"], "[Answer]\na\nb\nc\nd\nx"),
    official_row("q1", 2, "T2.2 Local Causal Chain Sorting", "T2. Sequencing & Structure Reconstruction",
                 ["a", "b", "c", "d"], ""),
    official_row("q2", 1, "T1.2 Key-Snippet Retrieval", "T1. Retrieval & Ranking", ["a", "b", "c", "d"],
                 "[Answer]\nb\na\nc\nd"),
    official_row("q2", 2, "T1.2 Key-Snippet Retrieval", "T1. Retrieval & Ranking", ["a", "b", "c", "d"],
                 "[Answer]\na\nb\nc\nd"),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_official_inference_shards_are_scored_and_summarised(tmp_path):
    folder = tmp_path / "Model"
    folder.mkdir()
    write_jsonl(folder / "nonthinking_context-120000_bon-2_inference_2-of-2.jsonl", ROWS[2:])
    write_jsonl(folder / "nonthinking_context-120000_bon-2_inference_1-of-2.jsonl", ROWS[:2])
    result = rescore_predictions(folder)
    summary = result["summary"]
    assert summary["total_samples_num"] == 4 and summary["fail_samples_num"] == 1
    assert summary["inference_iteration_1_overall_metric"] == pytest.approx((0.6 + 0.9496044283456991) / 2)
    assert summary["average_overall_metric"] == pytest.approx((0.3 + (0.9496044283456991 + 1) / 2) / 2)
    assert summary["BoN-2"]["overall_metric"] == pytest.approx((0.6 + 1.0) / 2)
    assert result["check"] is None
    evaluation = [json.loads(line) for line in open(result["written"]["evaluation"], encoding="utf-8")]
    assert [r["id"] for r in evaluation] == ["q1", "q1", "q2", "q2"]  # shard order, not file-name order
    assert evaluation[1]["success"] is False and evaluation[1]["error"] == "empty prediction"
    assert json.loads(open(result["written"]["summary"]).read())["total_questions_num"] == 2


def test_evaluation_file_metrics_are_compared(tmp_path):
    rows = [dict(r, metric=m) for r, m in zip(ROWS, [0.6, 0.0, 0.9496044283456991, 0.5])]
    result = rescore_predictions(write_jsonl(tmp_path / "eval.jsonl", rows), output_dir=tmp_path / "out")
    check = result["check"]
    assert (check["compared"], check["differing"]) == (4, 1) and check["examples"][0]["ours"] == 1.0


def test_jaxeval_samples_and_summary_rows_use_semsim(tmp_path, monkeypatch):
    fake = FakeSemSim(0.5)
    monkeypatch.setattr(rescore, "load_semsim", lambda settings: (fake, {"model": "fake"}))
    t4 = official_row("q3", 1, "T4.2 Query-Focused Summary", "T4. Summarization & Synthesis",
                      ["The cat sat.", "A dog ran.", "x"], "The cat sat.")
    samples = [{"task": "other_task", "id": "z"}, {"task": "longbench_pro", "key": "k", **t4}]
    result = rescore_predictions(write_jsonl(tmp_path / "run.samples_longbench_pro.jsonl", samples))
    assert result["summary"]["average_overall_metric"] == pytest.approx(0.25 + 0.5 * 0.999999995)
    assert fake.seen == [(["the cat sat.", "a dog ran.", "x"], "the cat sat.")]


def test_bad_rows_name_file_line_id_and_field(tmp_path):
    bad = dict(ROWS[0], bon_idx=0)
    path = write_jsonl(tmp_path / "x.jsonl", [ROWS[1], bad])
    with pytest.raises(DataError, match=r"x\.jsonl, line 2 \(id 'q1'\): field 'bon_idx'"):
        rescore_predictions(path)
    del bad["secondary_task"]
    write_jsonl(path, [bad])
    with pytest.raises(DataError, match="field 'secondary_task'"):
        rescore_predictions(path)


def test_cli_score(tmp_path, capsys):
    path = write_jsonl(tmp_path / "nonthinking_context-120000_bon-2_inference_1-of-1.jsonl", ROWS)
    assert main(["score", "--benchmark", "longbench_pro", "--predictions", str(path),
                 "--output_path", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "LongBench Pro overall:" in out and "wrote summary" in out
    assert (tmp_path / "out" / "nonthinking_context-120000_bon-2_jaxeval_summary.json").is_file()
    assert main(["score", "--benchmark", "longbench_pro", "--predictions", str(tmp_path / "nope.jsonl")]) == 2


def test_summary_file_is_laid_out_as_the_evaluators_save_json_file(tmp_path):
    # modules/evaluation.py save_json_file: json.dump(data, f, ensure_ascii=False, indent=4), no
    # trailing newline; so the official summaries begin '{\n    "date": ' and end '}' (the
    # language keys stay in Chinese/English order, and non-ASCII names are written as is)
    path = write_jsonl(tmp_path / "nonthinking_context-120000_bon-2_inference_1-of-1.jsonl", ROWS)
    result = rescore_predictions(path, output_dir=tmp_path / "out")
    text = (tmp_path / "out" / "nonthinking_context-120000_bon-2_jaxeval_summary.json").read_text(encoding="utf-8")
    assert text.startswith('{\n    "date": ') and text.endswith("}") and not text.endswith("\n")
    assert text == json.dumps(result["summary"], ensure_ascii=False, indent=4)
    assert list(json.loads(text)) == list(result["summary"])


@pytest.mark.parametrize("change, flags, message", [
    (lambda r: r.update(secondary_task="T9.9 Made Up"), [], "field 'secondary_task' is 'T9.9 Made Up', not a LongBench Pro task"),
    (lambda r: r.pop("prediction"), [], "no field 'prediction'"),
    (lambda r: None, ["--bon_num", "0"], "--bon_num must be a positive integer"),
])
def test_unknown_tasks_missing_predictions_and_bon_num_0_are_one_line(tmp_path, capsys, change, flags, message):
    bad = dict(ROWS[0])
    change(bad)
    path = write_jsonl(tmp_path / "x.jsonl", [ROWS[1], bad])
    assert main(["score", "--benchmark", "longbench_pro", "--predictions", str(path), "--output_path",
                 str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
