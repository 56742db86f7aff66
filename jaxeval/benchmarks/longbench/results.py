"""From prediction rows to jaxeval's LongBench results and the official result.json.

jaxeval's results (a dict, written as JSON):
  benchmark       "longbench" or "longbench_e"
  scores          dataset -> score (v1) or -> {"0-4k", "4-8k", "8k+"} (E): exactly result.json
  samples         dataset -> number of samples (v1) or -> per-bucket counts (E)
  categories      v1: {"en": {category: mean, ..., "Avg": mean}, "zh": {...}}, README rule;
                  None where a member dataset was not scored
  bucket_averages E: bucket -> mean over the 13 datasets (None unless all 13 were scored)
  sample_scores   dataset -> per-sample scores in file order (max over answers, in [0, 1])
  scoring         the options and versions that decide the numbers
Callers add `source` (rescoring) or `prompting` (runs).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, Sequence

from jaxeval.benchmarks.longbench.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench.scoring import (
    PredictionRow, bucket_sample_scores, category_scores, e_bucket_averages, e_scores, score_rows,
    v1_score,
)
from jaxeval.benchmarks.longbench.tasks import BUCKETS, DATASETS, E_DATASETS, LANGUAGE_TABLES
from jaxeval.errors import DataError

RESULT_JSON = "result.json"  # the official eval's file name


def benchmark_name(e: bool) -> str:
    return "longbench_e" if e else "longbench"


def score_datasets(rows_by_dataset: Mapping[str, Sequence[PredictionRow]], e: bool,
                   options: ScoringOptions = DEFAULT_OPTIONS) -> dict:
    """jaxeval's results for the given datasets' prediction rows (layout in the module doc)."""
    order = [name for name in (E_DATASETS if e else DATASETS) if name in rows_by_dataset]
    unknown = set(rows_by_dataset) - set(order)
    if unknown:
        raise DataError(f"not LongBench{'-E' if e else ''} datasets: {', '.join(sorted(unknown))}")
    scores, samples, sample_scores = {}, {}, {}
    for dataset in order:
        rows = rows_by_dataset[dataset]
        if not rows:
            raise DataError(f"{dataset}: no records to score")
        per_sample = score_rows(dataset, rows, options)
        sample_scores[dataset] = per_sample
        if e:
            lengths = [row.length for row in rows]
            if any(length is None for length in lengths):
                raise DataError(f"{dataset}: LongBench-E needs every prediction's `length`")
            scores[dataset] = e_scores(per_sample, lengths)
            samples[dataset] = {bucket: len(values)
                                for bucket, values in bucket_sample_scores(per_sample, lengths).items()}
        else:
            scores[dataset] = v1_score(per_sample)
            samples[dataset] = len(per_sample)
    result = {"benchmark": benchmark_name(e), "scores": scores, "samples": samples}
    if e:
        result["bucket_averages"] = e_bucket_averages(scores, E_DATASETS)
    else:
        result["categories"] = {table: category_scores(scores, table) for table in LANGUAGE_TABLES}
    result["sample_scores"] = sample_scores
    result["scoring"] = options.describe()
    return result


def write_result_json(path: str | Path, scores: Mapping) -> Path:
    """The official result.json: json.dump(scores, ensure_ascii=False, indent=4), NaN as NaN."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(dict(scores), out, ensure_ascii=False, indent=4)
    return path


def _same(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(_same(a[key], b[key]) for key in a))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True  # an empty LongBench-E bucket on both sides
    return a == b


def compare_result_json(path: str | Path, scores: Mapping) -> dict:
    """How `scores` compare with an existing result.json: which datasets differ or are missing."""
    from jaxeval.io.inputs import read_json

    path = Path(path)
    official = read_json(path, name="result.json")
    if not isinstance(official, dict):
        raise DataError(f"{path}: expected a JSON object of dataset scores")
    differences = {name: {"result_json": official[name], "jaxeval": scores[name]}
                   for name in scores if name in official and not _same(official[name], scores[name])}
    return {
        "path": str(path),
        "identical": not differences and official.keys() == scores.keys(),
        "differences": differences,
        "only_in_result_json": [name for name in official if name not in scores],
        "only_in_jaxeval": [name for name in scores if name not in official],
    }


def _cell(value) -> str:
    if value is None:
        return "-"
    return "NaN" if isinstance(value, float) and math.isnan(value) else f"{value:.2f}"


def format_scores_table(result: dict) -> str:
    """Per-dataset scores (per bucket for E) and, for v1, the two category tables."""
    e = result["benchmark"] == "longbench_e"
    header = ("dataset", *BUCKETS) if e else ("dataset", "score", "samples")
    lines = [header]
    for name, score in result["scores"].items():
        if e:
            lines.append((name, *(_cell(score[bucket]) for bucket in BUCKETS)))
        else:
            lines.append((name, _cell(score), str(result["samples"][name])))
    if e:
        lines.append(("average", *(_cell(result["bucket_averages"][b]) for b in BUCKETS)))
    else:
        for table, categories in result["categories"].items():
            lines.extend((f"[{table}] {category}", _cell(value), "") for category, value in categories.items())
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    rendered = ["  ".join([row[0].ljust(widths[0]), *(cell.rjust(w) for cell, w in zip(row[1:], widths[1:]))]).rstrip()
                for row in lines]
    rendered.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(rendered)
