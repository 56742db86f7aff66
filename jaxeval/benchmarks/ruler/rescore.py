"""`jaxeval score --benchmark ruler`: RULER's official prediction JSONL (call_api.py's rows:
index, pred, input, outputs, others, truncation, length) scored as scripts/eval/evaluate.py
scores them, without ever writing into the predictions folder (evaluate.py merges and deletes
chunk files and writes summary.csv there; this reads the chunks in its order instead).

--predictions is one `<task>.jsonl`, a pred folder of them, or a folder of `<length>/` (or
`<length>/pred/`) folders as RULER's run.sh lays out results/<model>/synthetic/<length>/pred."""

from __future__ import annotations

import re
from pathlib import Path

from jaxeval.io.rows import read_jsonl_file
from jaxeval.benchmarks.ruler.metrics import nulls, postprocess, task_score
from jaxeval.benchmarks.ruler.summary import length_averages
from jaxeval.benchmarks.ruler.tasks import TASKS, generator_of
from jaxeval.errors import DataError

_CHUNK = re.compile(r".*[^_]+-\d+\.jsonl")


def task_files(folder: Path) -> dict[str, list[Path]]:
    """task -> the files evaluate.py would score for it: its chunk files `<task>-<n>.jsonl` in
    sorted (string) order when there are any (they replace <task>.jsonl), else <task>.jsonl;
    only the tasks of synthetic.yaml."""
    names = sorted(p.name for p in folder.iterdir() if p.suffix == ".jsonl")
    chunks: dict[str, list[Path]] = {}
    for name in names:
        if _CHUNK.match(name):
            chunks.setdefault("-".join(name.split("-")[:-1]), []).append(folder / name)
    found = {}
    for task in TASKS:
        if task in chunks:
            found[task] = chunks[task]
        elif f"{task}.jsonl" in names:
            found[task] = [folder / f"{task}.jsonl"]
    return found


def score_task(task: str, paths: list[Path]) -> dict:
    """{score, nulls, rows, ids, predictions} of one task's rows, as run_evaluation_per_task."""
    predictions, references, ids = [], [], []
    for path in paths:
        for row, where in read_jsonl_file(path):
            if not isinstance(row, dict):
                raise DataError(f"{where}: not a JSON object")
            for field in ("input", "pred", "others", "index"):  # evaluate.py reads all four (KeyError without)
                if field not in row:
                    raise DataError(f"{where}: no {field!r} field (RULER's prediction rows carry index, input, pred, "
                                    f"outputs and others)")
            if not isinstance(row["pred"], str):
                raise DataError(f"{where}: 'pred' is not a string")
            refs = row.get("outputs", [row.get("output", "")])
            if not isinstance(refs, list) or not refs or not all(r is None or isinstance(r, str) for r in refs):
                raise DataError(f"{where}: 'outputs' is not a non-empty list of strings")
            others = row["others"]
            if not isinstance(others, dict):
                raise DataError(f"{where}: 'others' is not an object")
            predictions.append(postprocess(row["pred"]))
            references.append(refs)
            ids.append(others.get("id", row["index"]))
    if not predictions:
        raise DataError(f"{paths[0]}: no prediction rows (an empty file is not a score)")
    metric = generator_of(task).metric
    score = task_score(metric, predictions, references) if references[0][0] is not None else 0.0
    return {"task": task, "metric": metric, "score": score, "nulls": nulls(predictions), "samples": len(predictions),
            "files": [str(p) for p in paths], "ids": ids}


def _length_folders(root: Path) -> dict[int, Path]:
    out = {}
    for child in root.iterdir():
        if child.is_dir() and child.name.isdigit():
            pred = child / "pred"
            out[int(child.name)] = pred if pred.is_dir() else child
    return dict(sorted(out.items()))


def rescore(predictions: str) -> dict:
    """A result dict in the layout run_ruler returns (units, averages, effective length)."""
    root = Path(predictions)
    if not root.exists():
        raise DataError(f"--predictions {root}: no such file or folder")
    if root.is_file():
        task = root.stem if root.stem in TASKS else "-".join(root.stem.split("-")[:-1])
        if task not in TASKS:
            raise DataError(f"--predictions {root}: not a RULER task file (<task>.jsonl, task one of {', '.join(TASKS)})")
        groups = {None: {task: [root]}}
    else:
        lengths = _length_folders(root)
        groups = {n: task_files(folder) for n, folder in lengths.items()} if lengths else {None: task_files(root)}
    if not any(groups.values()):
        raise DataError(f"--predictions {root}: no RULER prediction file (<task>.jsonl) found")
    units = []
    for length, files in groups.items():
        for task, paths in files.items():
            units.append({**score_task(task, paths), "length": length if length is not None else "file"})
    tasks = sorted({u["task"] for u in units}, key=list(TASKS).index)
    lengths = [length if length is not None else "file" for length in groups]
    return {"benchmark": "ruler", "mode": "generate", "official_score": True, "source": str(root), "seed": None,
            "num_samples": None, "limit": None, "template": None, "lengths": lengths, "tasks": tasks, "data": {},
            "units": units, "skipped_lengths": {}, **length_averages(units, tasks, False)}
