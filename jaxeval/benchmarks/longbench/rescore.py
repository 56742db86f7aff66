"""Re-scoring a folder of official pred.py output without a model.

This is how existing runs move onto jaxeval: the same numbers as the official eval, written in
the official result.json layout, beside jaxeval's own results JSON. An existing result.json
is compared with, never overwritten by a different one (that would destroy the reference):
jaxeval's then goes to result.jaxeval.json.
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.longbench.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench.predictions import prediction_files, read_prediction_file
from jaxeval.benchmarks.longbench.results import (
    RESULT_JSON, benchmark_name, compare_result_json, score_datasets, write_result_json,
)
from jaxeval.io.json_files import write_json_atomic

RESULT_JSON_KEPT_ASIDE = "result.jaxeval.json"  # ours, when a different result.json is already there


def results_file_name(e: bool) -> str:
    """jaxeval's own results file: results_longbench.json or results_longbench_e.json."""
    return f"results_{benchmark_name(e)}.json"


def rescore_predictions(pred_dir: str | Path, e: bool = False, output_dir: str | Path | None = None,
                        options: ScoringOptions = DEFAULT_OPTIONS, write: bool = True) -> dict:
    """Score every <dataset>.jsonl in `pred_dir` as the official eval.py (--e for LongBench-E).

    Writes the official result.json and jaxeval's results JSON into `output_dir` (default:
    `pred_dir`, where the official eval writes result.json) unless write=False. Returns
    jaxeval's results (see results.py) with `source`, `result_json_check` (the comparison
    with a result.json found in pred_dir or output_dir, else None) and `written`.
    """
    pred_dir = Path(pred_dir)
    files = prediction_files(pred_dir, e)
    rows = {dataset: read_prediction_file(path, need_length=e) for dataset, path in files.items()}
    result = score_datasets(rows, e, options)
    result["source"] = {"predictions": str(pred_dir), "files": {name: str(path) for name, path in files.items()}}

    out_dir = Path(output_dir) if output_dir is not None else pred_dir
    existing = next((folder / RESULT_JSON for folder in (out_dir, pred_dir)
                     if (folder / RESULT_JSON).is_file()), None)
    result["result_json_check"] = compare_result_json(existing, result["scores"]) if existing else None
    result["written"] = {}
    if write:
        target = out_dir / RESULT_JSON
        if target.is_file() and not compare_result_json(target, result["scores"])["identical"]:
            target = out_dir / RESULT_JSON_KEPT_ASIDE
        if not (target.is_file() and compare_result_json(target, result["scores"])["identical"]):
            write_result_json(target, result["scores"])
        result["written"] = {"result_json": str(target),
                             "results": str(out_dir / results_file_name(e))}
        write_json_atomic(out_dir / results_file_name(e), result)
    return result
