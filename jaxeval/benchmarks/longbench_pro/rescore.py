"""Re-scoring saved LongBench Pro predictions without the evaluated model.

Accepted inputs (`--predictions`):
- the official harness's output: an inference JSONL (`<mode>_context-<L>_bon-<n>_inference_<i>-of-<k>.jsonl`),
  a folder of those shards (read in shard order, as the evaluator concatenates them), or its
  evaluation JSONL (rows already carrying `metric`: each is compared with ours);
- jaxeval's own per-sample output: the `--log_samples` JSONL (rows of other tasks are skipped),
  or a JSON file with a `samples` list (or a bare list of rows).
Writes the evaluation JSONL (official row format plus success / error), the official summary
JSON and jaxeval's results JSON (summary, extra breakdowns, scoring, deviations, check).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jaxeval.benchmarks.longbench_pro.data import read_jsonl
from jaxeval.benchmarks.longbench_pro.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench_pro.scoring import check_row, score_row, summarize_rows
from jaxeval.benchmarks.longbench_pro.semsim import SemSimSettings, load_semsim
from jaxeval.errors import ConfigError, DataError
from jaxeval.io.inputs import read_json
from jaxeval.io.json_files import write_json_atomic
from jaxeval.io.fs import write_text_atomic

TASK = "longbench_pro"
_SHARD = re.compile(r"_inference_(\d+)-of-(\d+)\.jsonl$")


def prediction_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if path.is_dir():
        shards = sorted((p for p in path.iterdir() if _SHARD.search(p.name)),
                        key=lambda p: (p.name[:_SHARD.search(p.name).start()], int(_SHARD.search(p.name).group(1))))
        prefixes = {p.name[:_SHARD.search(p.name).start()] for p in shards}
        if len(prefixes) > 1:
            raise DataError(f"{path}: inference files of {len(prefixes)} runs ({', '.join(sorted(prefixes))}); "
                            "pass one file or a folder of one run's shards")
        if shards:
            return shards
        raise DataError(f"{path}: no *_inference_<i>-of-<k>.jsonl files")
    raise DataError(f"{path}: no such file or folder")


def _jsonl_rows(path: Path) -> list[tuple[dict, str]]:
    """The rows of a JSONL file, less those of other tasks (a --log_samples file of several tasks)."""
    return [(row, where) for row, where in read_jsonl(path)
            if not (isinstance(row, dict) and row.get("task", TASK) != TASK)]


def _json_rows(path: Path) -> list[tuple[dict, str]]:
    data = read_json(path)
    if isinstance(data, dict):
        data = data.get("samples")
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a list of prediction rows or an object with a 'samples' list")
    return [(row, f"{path}, sample {index}") for index, row in enumerate(data)]


def read_prediction_rows(path: str | Path) -> list[tuple[dict, str]]:
    """(row, where) for every prediction row, validated, in file order."""
    rows = []
    for file in prediction_files(Path(path)):
        rows.extend(_json_rows(file) if file.suffix == ".json" else _jsonl_rows(file))
    if not rows:
        raise DataError(f"{path}: no LongBench Pro prediction rows")
    for row, where in rows:
        check_row(row, where)
    return rows


def compare_with_file(rows: list[tuple[dict, str]], scored: list[dict], tolerance: float = 1e-9) -> dict | None:
    """Where the input rows carry the official `metric`, how ours compare (None when none do)."""
    pairs = [(row, ours) for (row, _), ours in zip(rows, scored) if isinstance(row.get("metric"), (int, float))]
    if not pairs:
        return None
    differing = [{"id": row["id"], "bon_idx": row["bon_idx"], "secondary_task": row["secondary_task"],
                  "file": row["metric"], "ours": ours["metric"]}
                 for row, ours in pairs if abs(row["metric"] - ours["metric"]) > tolerance]
    return {"compared": len(pairs), "tolerance": tolerance, "differing": len(differing),
            "max_abs_difference": max(abs(row["metric"] - ours["metric"]) for row, ours in pairs),
            "examples": differing[:20]}


def official_summary_text(summary: dict) -> str:
    """The summary JSON laid out as the evaluator's save_json_file writes it: json.dump with
    indent=4 and ensure_ascii=False, no trailing newline."""
    return json.dumps(summary, ensure_ascii=False, indent=4)


def rescore_predictions(predictions: str | Path, *, output_dir: str | Path | None = None, bon_num: int | None = None,
                        semsim: SemSimSettings = SemSimSettings(), options: ScoringOptions = DEFAULT_OPTIONS) -> dict:
    if bon_num is not None and (isinstance(bon_num, bool) or not isinstance(bon_num, int) or bon_num < 1):
        raise ConfigError(f"--bon_num must be a positive integer (runs per question), got {bon_num!r}")
    rows = read_prediction_rows(predictions)
    needs_semsim = any(row["secondary_task"].startswith("T4") for row, _ in rows)
    similarity, description = load_semsim(semsim) if needs_semsim else (None, {"model": None, "unused": True})
    scored = [score_row(dict(row), similarity, options) for row, _ in rows]
    result = summarize_rows(scored, bon_num=bon_num)
    result["scoring"] = {**options.describe(), "semsim": description}
    result["deviations"] = [description["deviation"]] if description.get("deviation") else []
    result["check"] = compare_with_file(rows, scored)
    source = Path(predictions)
    folder = Path(output_dir) if output_dir else (source if source.is_dir() else source.parent)
    stem = source.name if source.is_dir() else re.sub(r"(_inference_\d+-of-\d+)?\.jsonl?$", "", source.name)
    evaluation = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in scored)
    result["written"] = {
        "evaluation": write_text_atomic(folder / f"{stem}_jaxeval_evaluation.jsonl", evaluation),
        "summary": write_text_atomic(folder / f"{stem}_jaxeval_summary.json", official_summary_text(result["summary"])),
    }
    result["written"]["results"] = str(folder / f"{stem}_jaxeval_results.json")
    write_json_atomic(result["written"]["results"], result)
    return result
