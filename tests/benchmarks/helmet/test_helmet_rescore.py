"""`jaxeval score --benchmark helmet`: HELMET's own output JSON and jaxeval's, and judge passes on them."""

from __future__ import annotations

import json

import pytest
from helmet_helpers import SAMPLE, FakeJudge, FakeModel

from jaxeval.benchmarks.helmet.rescore import read_keypoints, rescore
from jaxeval.benchmarks.helmet.runner import run_helmet
from jaxeval.benchmarks.helmet.tasks import helmet_units
from jaxeval.cli import main
from jaxeval.errors import DataError


def helmet_file(path, dataset, items, averaged, length=8192):
    path.write_text(json.dumps({"args": {"datasets": dataset, "input_max_length": length}, "data": items,
                                "metrics": {}, "averaged_metrics": averaged}))
    return path


JSON_KV = [{"question": "k1", "answer": ["abc-1"], "output": "Corresponding value: abc-1\nKey", "input_len": 900,
            "output_len": 100},
           {"question": "k2", "answer": ["xyz"], "output": "Corresponding value: nope", "input_len": 1100,
            "output_len": 100}]


def test_official_file_rescored_identically(tmp_path, capsys):
    path = helmet_file(tmp_path / "json_kv_out.json", "json_kv", JSON_KV,
                       {"exact_match": 50.0, "substring_exact_match": 50.0, "input_len": 1000.0, "output_len": 100.0})
    assert main(["score", "--benchmark", "helmet", "--predictions", str(path), "--output_path", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "json_kv 8k: identical to the official averages" in out
    saved = json.loads((tmp_path / "helmet_rescored.json").read_text())
    assert saved["units"][0]["headline"] == {"substring_exact_match": 50.0}


def test_differences_are_reported(tmp_path):
    path = helmet_file(tmp_path / "a.json", "json_kv", JSON_KV, {"substring_exact_match": 100.0})
    check = rescore(path)["units"][0]["official_check"]
    assert not check["identical"] and check["differences"] == {"substring_exact_match": [100.0, 50.0]}


def test_rerank_file_uses_qrel_and_first_items_candidate_count(tmp_path):
    qrel = [["1", "2"], ["2", "0"], ["3", "1"], ["4", "0"], ["5", "0"], ["6", "0"], ["7", "0"], ["8", "0"],
            ["9", "0"], ["10", "0"]]
    items = [{"qid": "q", "qrel": qrel, "output": "Ranking: 1 > 3 > 2"}]
    unit = rescore(helmet_file(tmp_path / "r.json", "msmarco_rerank_psg", items, {}))["units"][0]
    assert unit["headline"] == {"NDCG@10": 100.0} and unit["averaged_metrics"]["num_preds"] == 300.0


def test_judge_pass_on_saved_narrativeqa_and_summaries(tmp_path):
    items = [{"question": "Who?", "answer": ["Ada"], "output": "Ada", "id": 1}] * 3
    path = helmet_file(tmp_path / "n.json", "narrativeqa_130772", items, {}, length=131072)
    replies = iter(['{"fluency": 1, "correctness": 3}', '{"fluency": 0, "correctness": 3}', None])
    result = rescore(path, judge=FakeJudge(lambda p: next(replies)))
    unit = result["units"][0]
    assert unit["headline"] == {"gpt4_score": pytest.approx(50.0)} and unit["judge"]["gpt4_score"]["failed"] == 1
    summ = [{"id": 7, "answer": ["The expert summary."], "output": "Summary text."}]
    spath = helmet_file(tmp_path / "s.json", "infbench_sum_eng_129672", summ, {}, length=131072)
    kp = tmp_path / "kp.jsonl"
    kp.write_text(json.dumps({"id": 7, "keypoints": ["a", "b"]}) + "\n")
    judge = FakeJudge(lambda p: '{"fluency": 1, "recall": 1, "precision": 1, "sentence_count": 1}')
    result = rescore(spath, judge=judge, keypoints=read_keypoints(kp))
    assert result["units"][0]["headline"]["gpt4_f1"] == pytest.approx(100 * 2 * 1 * 0.5 / 1.5)
    assert "<start of summary>The expert summary.<end of summary>" in judge.prompts[2]  # the book variant
    with pytest.raises(DataError, match="no keypoints"):
        rescore(spath, judge=judge)


def test_jaxeval_results_rescored_from_details(tmp_path, tokenizer):
    units = helmet_units(("recall",), ["8k"])[:2]
    section = run_helmet(FakeModel(tokenizer, " 12"), units, SAMPLE, limit=2)
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"details": {"helmet": section}}))
    result = rescore(path)
    assert [u["official_check"]["identical"] for u in result["units"]] == [True, True]


def test_not_a_helmet_file(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(DataError, match="neither a HELMET output file"):
        rescore(path)
