"""Results files for the report tests, built with the benchmarks' own result functions.

Two models: "model_a" recalls well near and badly far, "model_b" the reverse; so every plot
has two different lines and a test can tell them apart.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxeval.benchmarks.agent_bench.facts import ItemOutcome, QueryOutcome, facts_metrics
from jaxeval.benchmarks.agent_bench.output import headline_rows
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
