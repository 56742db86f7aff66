"""Prediction files in the official pred.py layout: one `<dataset>.jsonl` per dataset.

Each line is {"pred": str, "answers": [str, ...], "all_classes": [str, ...] | null,
"length": int}. The official eval reads every file ending in "jsonl" in the folder, names the
dataset by the file name up to its first ".", and takes all_classes from the last line.
jaxeval writes the same layout, so its generations can be scored by the official eval too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from jaxeval.benchmarks.longbench.scoring import PredictionRow
from jaxeval.benchmarks.longbench.tasks import DATASETS, E_DATASETS, E_SUFFIX
from jaxeval.io.rows import read_jsonl_file
from jaxeval.errors import DataError


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _row(record: Any, where: str, need_length: bool) -> PredictionRow:
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {_type_name(record)}")

    def fail(field: str, problem: str) -> None:
        raise DataError(f"{where}, field '{field}': {problem}")

    for field in ("pred", "answers", "all_classes"):
        if field not in record:
            fail(field, "missing")
    if not isinstance(record["pred"], str):
        fail("pred", f"expected a string, got {_type_name(record['pred'])}")
    answers = record["answers"]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        fail("answers", f"expected a list of strings, got {_type_name(answers)}")
    classes = record["all_classes"]
    if classes is not None and (not isinstance(classes, list) or not all(isinstance(c, str) for c in classes)):
        fail("all_classes", f"expected null or a list of strings, got {_type_name(classes)}")
    length = record.get("length")
    if length is not None and (not isinstance(length, int) or isinstance(length, bool)):
        fail("length", f"expected an integer, got {_type_name(length)}")
    if need_length and length is None:
        fail("length", "missing; LongBench-E buckets records by it")
    return PredictionRow(pred=record["pred"], answers=tuple(answers),
                         all_classes=None if classes is None else tuple(classes), length=length,
                         origin=where)


def read_prediction_file(path: str | Path, need_length: bool = False) -> list[PredictionRow]:
    """Every line of one prediction file, checked. need_length: every line must have `length`."""
    path = Path(path)
    rows = [_row(record, where, need_length) for record, where in read_jsonl_file(path)]
    if not rows:
        raise DataError(f"{path}: no predictions (an empty file cannot be scored)")
    return rows


def prediction_files(folder: str | Path, e: bool) -> dict[str, Path]:
    """dataset -> file, for every file ending in "jsonl" in `folder`, in the official order.

    Files are named `<dataset>.jsonl` as pred.py writes them, for LongBench-E too
    ("qasper.jsonl" in pred_e/<model>/); a "<dataset>_e.jsonl" name is accepted there.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder of prediction files (<dataset>.jsonl)")
    available = E_DATASETS if e else DATASETS
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if not path.name.endswith("jsonl") or not path.is_file():
            continue
        dataset = path.name.split(".")[0]
        if e and dataset.endswith(E_SUFFIX) and dataset.removesuffix(E_SUFFIX) in available:
            dataset = dataset.removesuffix(E_SUFFIX)
        if dataset not in available:
            hint = "" if e or dataset.removesuffix(E_SUFFIX) not in E_DATASETS else " (LongBench-E files need --e)"
            raise DataError(f"{path}: '{dataset}' is not a LongBench{'-E' if e else ''} dataset{hint}; "
                            f"files must be named <dataset>.jsonl with one of: {', '.join(available)}")
        if dataset in found:
            raise DataError(f"{path}: a second prediction file for '{dataset}' (first: {found[dataset]})")
        found[dataset] = path
    if not found:
        raise DataError(f"{folder}: no prediction files (<dataset>.jsonl) in this folder")
    return {name: found[name] for name in available if name in found}


def write_prediction_file(path: str | Path, rows: Sequence[PredictionRow]) -> Path:
    """One line per row, as pred.py writes them (ensure_ascii=False)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            line = {"pred": row.pred, "answers": list(row.answers),
                    "all_classes": None if row.all_classes is None else list(row.all_classes),
                    "length": row.length}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path
