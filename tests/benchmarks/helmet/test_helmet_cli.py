"""The CLI surface: registry hooks, `jaxeval validate`/`run` on the embedded model and sample."""

from __future__ import annotations

import json

import pytest
from helmet_helpers import SAMPLE, FakeModel

from jaxeval.benchmarks.helmet.benchmark import BENCHMARK, HelmetSettings
from jaxeval.benchmarks.helmet.runner import run_helmet
from jaxeval.benchmarks.helmet.summary import describe, summarize
from jaxeval.benchmarks.helmet.tasks import helmet_units
from jaxeval.benchmarks.registry import run_tasks, scorers
from jaxeval.cli import main
from jaxeval.errors import ConfigError
from jaxeval.run.schema import add_task, empty_results


def test_registered():
    assert run_tasks()["helmet"] is run_tasks()["helmet_agenticlu"] is BENCHMARK and scorers()["helmet"] is BENCHMARK
    assert describe()["helmet"]["lengths"] == ["8k", "16k", "32k", "64k", "128k"]


def test_validate_lists_sample_units():
    lines = BENCHMARK.validate("helmet", HelmetSettings())
    assert lines[0] == "ruler_niah_mk_2 8k: 4 samples" and len(lines) == 11
    with pytest.raises(ConfigError, match="only the rag and longqa"):
        BENCHMARK.validate("helmet_agenticlu", HelmetSettings(categories="recall"))


def test_summary_fits_the_results_schema(tokenizer):
    section = run_helmet(FakeModel(tokenizer, " x"), helmet_units(("recall",), ["8k"]), SAMPLE, limit=1)
    results = empty_results()
    add_task(results, "helmet", section, summarize("helmet", section))
    assert results["results"]["helmet/json_kv/8k"]["substring_exact_match"] == 0.0
    assert results["groups"]["helmet"]["8k/recall"] == 0.0 and results["groups"]["helmet"]["8k/overall"] is None
    assert "newline" in results["deviations"]["helmet"][0]


def test_rerank_units_from_a_released_layout_folder(tmp_path, tokenizer):
    folder = tmp_path / "data" / "msmarco"
    folder.mkdir(parents=True)
    def rows(prefix, n):
        return [{"qid": f"{prefix}{q}", "query": f"query {q}",
                 "ctxs": [{"id": str(i), "text": f"passage {i}", "label": (i + q) % 3} for i in range(1, 6)]}
                for q in range(n)]
    for name, data in (("test_reranking_data_k50_dep3.jsonl", rows("t", 3)),
                       ("test_reranking_data_k10_dep3.jsonl", rows("d", 4))):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in data))
    units = helmet_units(("rerank",), ["8k"])
    result = run_helmet(FakeModel(tokenizer, " 3 > 2 > 1"), units, tmp_path)
    items = result["outputs"]["msmarco_rerank_psg/8k"]
    assert len(items) == 3 and items[0]["output"] == "Ranking: 3 > 2 > 1"
    assert "NDCG@10" not in result["units"][0]["averaged_metrics"]  # 5 candidates: k <= 5 only
    assert result["collect"]["8k"]["categories"]["rerank"]["complete"] is False


@pytest.mark.slow
def test_cli_run_on_embedded_model(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["run", "--tasks", "helmet", "--limit", "1", "--out", str(out), "--output_path", str(tmp_path)]) == 0
    results = json.loads(out.read_text())
    assert set(results["details"]["helmet"]["outputs"]) >= {"json_kv/8k", "kilt_nq/8k", "narrativeqa_7892/8k"}
    assert "helmet/json_kv/8k" in results["results"]
    assert main(["score", "--benchmark", "helmet", "--predictions", str(out)]) == 0
    assert capsys.readouterr().out.count("identical to the official averages") == 11


@pytest.mark.slow
def test_judge_pass_with_the_embedded_model_as_local_judge(tmp_path, capsys):
    """The tiny model's replies are no rubric JSON: every judgement is counted as failed, none scored 0."""
    path = tmp_path / "narrativeqa_out.json"
    items = [{"question": "Who?", "answer": ["Ada"], "output": "Ada"}, {"question": "Where?", "answer": ["Rome"],
                                                                        "output": "Paris"}]
    path.write_text(json.dumps({"args": {"datasets": "narrativeqa_7892", "input_max_length": 8192}, "data": items,
                                "averaged_metrics": {}}))
    from helmet_helpers import TINY
    assert main(["score", "--benchmark", "helmet", "--predictions", str(path), "--helmet_judge", f"local:{TINY}",
                 "--helmet_judge_max_tokens", "24",
                 "--output_path", str(tmp_path)]) == 0
    saved = json.loads((tmp_path / "helmet_rescored.json").read_text())
    judged = saved["units"][0]["judge"]["gpt4_score"]
    assert judged["judged"] + judged["failed"] == 2 and saved["judge"]["backend"] == "local"
    assert saved["units"][0]["headline"]["gpt4_score"] is None or judged["judged"] > 0
