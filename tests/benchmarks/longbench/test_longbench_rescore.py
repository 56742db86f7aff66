"""Re-scoring official pred.py output: the official eval's result.json, exactly."""

from __future__ import annotations

import argparse
import json
import math
import shutil

import pytest

from jaxeval.benchmarks.longbench import rescore_predictions, ScoringOptions
from jaxeval.benchmarks.longbench.benchmark import BENCHMARK as LONGBENCH
from jaxeval.benchmarks.longbench.results import category_scores
from jaxeval.benchmarks.longbench.tasks import DATASETS, reference_scores
from jaxeval.errors import DataError
from longbench_helpers import DATA, write_jsonl

OFFICIAL = DATA / "official_eval"


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return (math.isnan(a) and math.isnan(b)) if isinstance(a, float) and math.isnan(a) else a == b


@pytest.mark.parametrize("folder,e", [("pred", False), ("pred_e", True)])
def test_reproduces_the_official_result_json(tmp_path, folder, e):
    official = json.loads((OFFICIAL / folder / "result.json").read_text())
    result = rescore_predictions(OFFICIAL / folder, e=e, output_dir=tmp_path)
    assert same(result["scores"], official)
    assert result["result_json_check"]["identical"]
    written = json.loads((tmp_path / "result.json").read_text())
    assert same(written, official) and list(written) == [n for n in result["scores"]]
    assert (tmp_path / "result.json").read_text().startswith("{\n    \"")  # indent=4, as eval.py
    ours = json.loads((tmp_path / ("results_longbench_e.json" if e else "results_longbench.json")).read_text())
    assert same(ours["scores"], official) and ours["benchmark"] == ("longbench_e" if e else "longbench")
    assert ours["scoring"]["code_sim_backend"] == "difflib" and ours["scoring"]["jieba"] == "0.42.1"


def test_e_buckets_nan_and_counts():
    result = rescore_predictions(OFFICIAL / "pred_e", e=True, write=False)
    assert result["scores"]["passage_count"]["0-4k"] >= 0
    buckets = result["scores"]["passage_count"]
    assert math.isnan(buckets["4-8k"]) and math.isnan(buckets["8k+"])
    assert result["samples"]["passage_count"]["4-8k"] == 0
    assert set(result["bucket_averages"]) == {"0-4k", "4-8k", "8k+"}


def test_rouge_recursion_option_changes_only_long_pairs():
    result = rescore_predictions(OFFICIAL / "pred", write=False, options=ScoringOptions(rouge_recursion="none"))
    assert set(result["result_json_check"]["differences"]) == {"gov_report", "vcsum"}


def test_existing_result_json_is_never_replaced_by_a_different_one(tmp_path):
    shutil.copytree(OFFICIAL / "pred", tmp_path / "pred")
    before = (tmp_path / "pred" / "result.json").read_bytes()
    result = rescore_predictions(tmp_path / "pred")  # identical: left as it is
    assert (tmp_path / "pred" / "result.json").read_bytes() == before
    assert result["written"]["result_json"].endswith("result.json")
    result = rescore_predictions(tmp_path / "pred", options=ScoringOptions(rouge_recursion="none"))
    assert (tmp_path / "pred" / "result.json").read_bytes() == before
    assert result["written"]["result_json"].endswith("result.jaxeval.json")
    assert not result["result_json_check"]["identical"]


def test_prediction_file_problems(tmp_path):
    row = {"pred": "Paris", "answers": ["Paris"], "all_classes": None, "length": 10}
    write_jsonl(tmp_path / "a" / "qasper.jsonl", [row])
    write_jsonl(tmp_path / "a" / "notes.jsonl", [row])
    with pytest.raises(DataError, match="'notes' is not a LongBench dataset"):
        rescore_predictions(tmp_path / "a", write=False)
    write_jsonl(tmp_path / "b" / "qasper_e.jsonl", [row])
    with pytest.raises(DataError, match="need --e"):
        rescore_predictions(tmp_path / "b", write=False)
    assert rescore_predictions(tmp_path / "b", e=True, write=False)["scores"]["qasper"]["0-4k"] == 100.0
    write_jsonl(tmp_path / "c" / "qasper.jsonl", [row, {k: v for k, v in row.items() if k != "length"}])
    assert rescore_predictions(tmp_path / "c", write=False)["scores"] == {"qasper": 100.0}
    with pytest.raises(DataError, match=r"qasper.jsonl, line 2, field 'length'"):
        rescore_predictions(tmp_path / "c", e=True, write=False)
    write_jsonl(tmp_path / "d" / "qasper.jsonl", [dict(row, answers="Paris")])
    with pytest.raises(DataError, match=r"line 1, field 'answers'"):
        rescore_predictions(tmp_path / "d", write=False)
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "qasper.jsonl").write_text("")
    with pytest.raises(DataError, match="no predictions"):
        rescore_predictions(tmp_path / "e", write=False)
    with pytest.raises(DataError, match="no such folder"):
        rescore_predictions(tmp_path / "missing", write=False)
    write_jsonl(tmp_path / "f" / "trec.jsonl", [{"pred": "City", "answers": ["City"], "all_classes": None}])
    with pytest.raises(DataError, match=r"trec.jsonl, line 1: .*all_classes"):
        rescore_predictions(tmp_path / "f", write=False)


def test_cli_pieces(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    LONGBENCH.add_score_arguments(parser)
    args = parser.parse_args(["--predictions", str(OFFICIAL / "pred_e"), "--e", "--output_path", str(tmp_path)])
    assert LONGBENCH.rescore(LONGBENCH.score_options(args)) == 0
    out = capsys.readouterr().out
    assert "passage_count" in out and "NaN" in out and f"identical to {OFFICIAL / 'pred_e' / 'result.json'}" in out
    assert (tmp_path / "result.json").is_file() and (tmp_path / "results_longbench_e.json").is_file()
    args = parser.parse_args(["--predictions", str(OFFICIAL / "pred"), "--output_path", str(tmp_path / "v1"),
                              "--code_sim_backend", "difflib", "--rouge_recursion", "python3.8-3.10"])
    assert LONGBENCH.rescore(LONGBENCH.score_options(args)) == 0
    assert "differs from" in capsys.readouterr().out
    for name in ("python3.11", "python3.12+", "python3.8-3.10", "none", "python3.11+"):  # last: the old name
        assert parser.parse_args(["--predictions", "p", "--rouge_recursion", name]).rouge_recursion == name
    assert parser.parse_args(["--predictions", "p"]).rouge_recursion == "python3.11"


def test_category_tables_follow_the_readme_rule():
    reference = reference_scores()
    for model, values in reference["per_dataset"].items():
        scores = dict(zip(reference["per_dataset_columns"], values))
        for table in ("en", "zh"):
            ours = category_scores(scores, table)
            columns = reference[f"category_{table}"]
            published = dict(zip(columns["columns"], columns["rows"][model]))
            for name, value in published.items():
                key = {"Single-Doc QA": "Single-Document QA", "Multi-Doc QA": "Multi-Document QA"}.get(name, name)
                assert abs(ours[key] - value) <= 0.1, (model, table, name)
    partial = category_scores({name: 10.0 for name in DATASETS if name != "qasper"}, "en")
    assert partial["Single-Document QA"] is None and partial["Avg"] is None and partial["Code Completion"] == 10.0
