"""Results files for the report tests, built with the benchmarks' own result functions.

Two models: "model_a" recalls well near and badly far, "model_b" the reverse; so every plot
has two different lines and a test can tell them apart.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxeval.benchmarks.agent_bench.facts import ItemOutcome, QueryOutcome, facts_metrics
from jaxeval.benchmarks.agent_bench.runner import headline_rows
from jaxeval.benchmarks.agent_bench.tool_calls import ToolItemOutcome, ToolTargetOutcome, tool_calls_metrics
from jaxeval.benchmarks.longbench.results import score_datasets
from jaxeval.benchmarks.longbench.scoring import PredictionRow

SPLIT_TOKENS = {"8k": 8192, "32k": 32768}


def _right(model: str, distance: int) -> bool:
    return distance < 2048 if model == "model_a" else distance >= 2048


def agent_bench_section(model: str, splits=("8k", "32k")) -> dict:
    sets: dict[str, dict] = {"facts": {}, "tool_calls": {}}
    for split in splits:
        distances = [300, 700, 1500, 3000, 6000, SPLIT_TOKENS[split] - 500]
        queries = tuple(QueryOutcome("item-0", index, aligned=True, recalled=_right(model, d), answer_tokens=3,
                                     correct_tokens=3 if _right(model, d) else 1, logprob=-1.5, distance_tokens=d)
                        for index, d in enumerate(distances))
        sets["facts"][split] = facts_metrics([ItemOutcome("item-0", "text", None, SPLIT_TOKENS[split], queries)])
        targets = tuple(ToolTargetOutcome(kind="name", far=d > 512, fresh=False, aligned=True,
                                          correct=_right(model, d), logprob=-2.0, tokens=2, distance_tokens=d)
                        for d in distances)
        sets["tool_calls"][split] = tool_calls_metrics([ToolItemOutcome("item-1", "text", None, 100, targets)])
    return {"rows": headline_rows(sets), "sets": sets, "reference": None, "mode_requested": "auto", "mode": "text",
            "mode_notes": []}


def longbench_section(model: str, e: bool) -> dict:
    rows, outputs = {}, {}
    for dataset in ("qasper", "hotpotqa"):
        lengths = [1000, 3000, 5000, 7000, 9000, 12000]
        rows[dataset] = [PredictionRow(pred="Paris" if _right(model, n // 3) else "Lyon", answers=("Paris",),
                                       all_classes=None, length=n) for n in lengths]
        outputs[dataset] = [{"raw_prompt_tokens": n, "truncated": n > 8000} for n in lengths]
    section = score_datasets(rows, e)
    if not e:  # what the runner adds: per-record outputs with their scores
        for dataset, per_sample in section["sample_scores"].items():
            for output, score in zip(outputs[dataset], per_sample):
                output["score"] = score
        section["outputs"] = outputs
    return section


def write_run(folder: Path, model: str, tasks: dict) -> Path:
    """A results file as `jaxeval run` writes it today: {"tasks": ..., "run": ...}."""
    path = folder / f"{model}.json"
    run = {"model": {"path": f"/models/{model}", "dtype": "float32"}, "devices": {"count": 1, "kind": "cpu"},
           "git_sha": "0123456789abcdef", "created": "2026-11-30T00:00:00+00:00", "wall_time_s": 12.5}
    path.write_text(json.dumps({"tasks": tasks, "run": run}), encoding="utf-8")
    return path


def two_runs(folder: Path) -> list[Path]:
    return [write_run(folder, model, {"agent_bench": agent_bench_section(model),
                                      "longbench": longbench_section(model, e=False),
                                      "longbench_e": longbench_section(model, e=True)})
            for model in ("model_a", "model_b")]


HELMET_LENGTHS = ("8k", "16k", "32k")
# per model: recall falls with length for model_a, holds for model_b
HELMET_RECALL = {"model_a": (80.0, 75.0, 40.0), "model_b": (50.0, 50.0, 48.0)}


def helmet_section(model: str, lengths=HELMET_LENGTHS) -> dict:
    """A HELMET result as run_helmet returns it (units, collect, outputs): the four recall datasets
    (json_kv: substring_exact_match, RULER: ruler_recall), msmarco_rerank_psg (NDCG@10) and
    narrativeqa (gpt4_score, not judged: None), each with an exact_match that is not its headline.
    The json_kv items carry a needle depth."""
    from jaxeval.benchmarks.helmet.scoring import collect, headline

    units, table, outputs = [], {}, {}
    for position, length in enumerate(lengths):
        recall = HELMET_RECALL[model][position]
        per_unit = {
            "json_kv": {"substring_exact_match": recall, "exact_match": 0.0, "input_len": 8000.0},
            **{name: {"ruler_recall": recall, "exact_match": 0.0}
               for name in ("ruler_niah_mk_2", "ruler_niah_mk_3", "ruler_niah_mv")},
            "msmarco_rerank_psg": {"NDCG@10": 30.0 + position, "exact_match": 0.0},
            "narrativeqa_7892": {"rougeL_f1": 12.0, "exact_match": 0.0},
        }
        for dataset, averages in per_unit.items():
            units.append({"dataset": dataset, "length": length, "samples": 10, "averaged_metrics": averages,
                          "headline": headline(dataset, averages), "notes": {"truncated": 1 if length == "32k" else 0},
                          "judge": None, "chat_template": False})
            table[(dataset, length)] = averages
        # ten json_kv items: needle at depths 0.05 .. 0.95, right (1) in the first recall/10 of them
        outputs[f"json_kv/{length}"] = [{"key": f"helmet/json_kv/{length}/kv-{i}/0", "needle_depth": (i + 0.5) / 10,
                                         "substring_exact_match": 1.0 if i < recall / 10 else 0.0} for i in range(10)]
    return {"benchmark": "helmet", "units": units, "collect": collect(table), "outputs": outputs}


def write_v1(folder: Path, stem: str, model: str, tasks: dict) -> Path:
    """A schema-v1 results file holding `tasks` (task -> details section) for `model`."""
    path = folder / f"{stem}.json"
    data = {"schema_version": 1, "results": {}, "details": tasks, "run_name": stem,
            "model": {"path": f"/models/{model}", "fingerprint": f"fp-{model}"}, "config": {"tasks": list(tasks)}}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
