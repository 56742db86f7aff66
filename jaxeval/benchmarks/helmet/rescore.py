"""Re-scoring saved HELMET outputs without a model, and judge passes on them.

Accepted inputs (a file or a folder of *.json files):
* HELMET's own output JSON (eval.py): {"args": {"datasets", "input_max_length", ...}, "data": [items],
  "metrics": {...}, "averaged_metrics": {...}}; the official averages (and a sibling ".score" file,
  which for ALCE is eval_alce's) are compared with jaxeval's recomputation, measure by measure, and
  so is every item's own saved metrics and parsed_output (eval.py merges them into the item);
* HELMET's judged copies (X-gpt4eval_o.json: the same plus each item's "gpt-4-scores" and the
  averaged "gpt-4-score" / "gpt-4-f1" ...): their judge scores are re-derived from the saved
  judgements without a judge; in a folder the judged copy replaces X.json, as collect_results does;
* jaxeval's results JSON (its "details" section "helmet"/"helmet_agenticlu", or that section itself),
  whose `outputs` hold the scored items.
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.helmet.runner import apply_judgement, judge_dataset, score_records
from jaxeval.benchmarks.helmet.scoring import collect, headline
from jaxeval.benchmarks.helmet.tasks import family, length_label
from jaxeval.errors import DataError

TOLERANCE = 1e-9
KEYPOINT_FIELDS = ("keypoints", "summary/short_keypoints")


def _read_json(path: Path):
    from jaxeval.io.inputs import read_json

    return read_json(path)


def _helmet_file(path: Path, raw: dict) -> list[dict]:
    args = raw.get("args")
    if not isinstance(args, dict) or not isinstance(args.get("datasets"), str):
        raise DataError(f"{path}: field 'args.datasets' missing (not a HELMET output file)")
    if not isinstance(raw.get("data"), list):
        raise DataError(f"{path}: field 'data' missing or not a list")
    if not raw["data"]:
        raise DataError(f"{path}: field 'data' is empty (no outputs to score)")
    official = dict(raw.get("averaged_metrics") or {})
    score_file = Path(str(path) + ".score")
    if score_file.is_file():
        official.update(_read_json(score_file))
    try:
        length = length_label(int(args.get("input_max_length")))
    except (TypeError, ValueError):
        raise DataError(f"{path}: field 'args.input_max_length' is not an integer") from None
    return [{"source": str(path), "dataset": args["datasets"], "length": length, "items": raw["data"],
             "official": official}]


def _jaxeval_section(path: Path, section: dict, agenticlu: bool = False) -> list[dict]:
    units, outputs = section.get("units"), section.get("outputs")
    if not isinstance(units, list) or not isinstance(outputs, dict):
        raise DataError(f"{path}: HELMET section lacks 'units' / 'outputs'")
    found = []
    for unit in units:
        name = f"{unit['dataset']}/{unit['length']}"
        if name not in outputs:
            raise DataError(f"{path}: outputs of {name} missing")
        found.append({"source": str(path), "dataset": unit["dataset"], "length": unit["length"],
                      "items": outputs[name], "official": dict(unit.get("averaged_metrics") or {}),
                      "agenticlu": agenticlu})
    return found


def load_saved(path: str | Path) -> list[dict]:
    """Every saved run in `path`: {source, dataset, length, items, official}."""
    path = Path(path)
    # a folder: HELMET's outputs; a judged copy X-gpt4eval_o.json holds X.json's items again plus the
    # judgements, and collect_results reads it instead of X.json
    if path.is_dir():
        found = {f.name: f for f in path.glob("*.json")}
        files = sorted(f for name, f in found.items()
                       if name.endswith("-gpt4eval_o.json") or name.replace(".json", "-gpt4eval_o.json") not in found)
    else:
        files = [path]
    if not files or not all(f.is_file() for f in files):
        raise DataError(f"{path}: no HELMET output JSON found")
    runs = []
    for file in files:
        raw = _read_json(file)
        if isinstance(raw, dict) and "args" in raw and "data" in raw:
            runs += _helmet_file(file, raw)
        elif isinstance(raw, dict) and isinstance(raw.get("details", raw.get("tasks")), dict):
            sections = raw.get("details", raw.get("tasks"))
            for name in ("helmet", "helmet_agenticlu"):
                if name in sections:
                    runs += _jaxeval_section(file, sections[name], agenticlu=name == "helmet_agenticlu")
        elif isinstance(raw, dict) and raw.get("benchmark") in ("helmet", "agenticlu"):
            runs += _jaxeval_section(file, raw, agenticlu=raw.get("benchmark") == "agenticlu")
        elif path.is_file():
            raise DataError(f"{file}: neither a HELMET output file nor a jaxeval HELMET result")
    if not runs:
        raise DataError(f"{path}: no HELMET outputs in it")
    return runs


def read_keypoints(path: str | Path) -> dict[str, list[str]]:
    """id -> keypoints from a JSONL file (InfBench keypoints or Multi-LexSum validation rows)."""
    from jaxeval.io.rows import read_jsonl_file

    out = {}
    for row, where in read_jsonl_file(path):
        field = next((f for f in KEYPOINT_FIELDS if isinstance(row, dict) and isinstance(row.get(f), list)), None)
        if field is None or "id" not in row:
            raise DataError(f"{where}: fields 'id' and 'keypoints' (or 'summary/short_keypoints') needed")
        out[str(row["id"])] = row[field]
    if not out:
        raise DataError(f"{path}: no keypoints in it")
    return out


def attach_summary_fields(dataset: str, items: list[dict], keypoints: dict | None, where: str) -> list[dict]:
    """Items with `keypoints` and `expert_summary` for the summarisation judge."""
    book = family(dataset) == "infbench_sum_eng"
    out = []
    for i, item in enumerate(items):
        extra = {}
        if "keypoints" not in item:
            if keypoints is None or str(item.get("id")) not in keypoints:
                raise DataError(f"{where} item {i} (id {item.get('id')!r}): no keypoints (pass --helmet_keypoints)")
            extra["keypoints"] = keypoints[str(item["id"])]
        if "expert_summary" not in item:
            answer = item.get("answer")
            # upstream: answer[0] for InfBench, the item's summary/long for Multi-LexSum
            expert = (answer[0] if isinstance(answer, list) and answer else answer) if book else item.get("summary/long")
            if not isinstance(expert, str):
                raise DataError(f"{where} item {i}: no expert summary ({'answer' if book else 'summary/long'})")
            extra["expert_summary"] = expert
        out.append({**item, **extra})
    return out


def _differs(a, b) -> bool:
    if isinstance(a, (bool, int, float)) and isinstance(b, (bool, int, float)):
        return abs(float(a) - float(b)) > TOLERANCE
    return a != b


def compare(official: dict, recomputed: dict) -> dict:
    """Measures present in both: identical (within 1e-9) or the pair of differing values."""
    shared = [k for k in official if k in recomputed and isinstance(official[k], (bool, int, float))
              and isinstance(recomputed[k], (bool, int, float))]
    differing = {k: [official[k], recomputed[k]] for k in shared if _differs(official[k], recomputed[k])}
    return {"compared": len(shared), "identical": bool(shared) and not differing, "differences": differing}


def compare_items(originals: list[dict], records: list[dict], measures) -> dict:
    """Each item's saved metrics (and parsed_output) against the recomputed ones."""
    names = [m for m in measures if "_len" not in m] + ["parsed_output"]
    compared = differing = 0
    examples = []
    for i, (original, record) in enumerate(zip(originals, records)):
        shared = [n for n in names if n in original and n in record
                  and (n == "parsed_output" or isinstance(original[n], (bool, int, float)))]
        if not shared:
            continue
        compared += 1
        diffs = {n: [original[n], record[n]] for n in shared if _differs(original[n], record[n])}
        if diffs:
            differing += 1
            if len(examples) < 5:
                examples.append({"item": i, "differences": diffs})
    return {"items_compared": compared, "items_differing": differing, "examples": examples}


def rescore(path: str | Path, *, judge=None, nli=None, agenticlu: bool = False, agenticlu_prompt=None,
            keypoints: dict | None = None) -> dict:
    """Re-score every saved run in `path`; judges run when given (the separate judge pass)."""
    units, outputs, table_in = [], {}, {}
    for run in load_saved(path):
        dataset, where = run["dataset"], f"{run['source']} ({run['dataset']})"
        items = [dict(item) for item in run["items"]]
        if judge is not None and not agenticlu and family(dataset) in ("infbench_sum_eng", "multi_lexsum"):
            items = attach_summary_fields(dataset, items, keypoints, where)
        records, averages, notes = score_records(dataset, items, nli=nli)
        judged_notes = None
        # without a judge: the judgements HELMET saved in the items, if any
        judged = None
        if judge is not None or not run.get("agenticlu"):  # saved AgenticLU verdicts are not HELMET judgements
            judged = judge_dataset(dataset, records, judge, agenticlu=agenticlu, agenticlu_prompt=agenticlu_prompt)
        if judged is not None:
            judged_notes = apply_judgement(records, averages, judged)
            if judge is None:
                judged_notes = {name: {**v, "source": "saved judgements"} for name, v in judged_notes.items()}
        name = f"{dataset}/{run['length']}"
        outputs[name] = records
        table_in[(dataset, run["length"])] = averages
        units.append({"dataset": dataset, "length": run["length"], "source": run["source"], "samples": len(records),
                      "averaged_metrics": averages, "headline": headline(dataset, averages), "notes": notes,
                      "judge": judged_notes, "official_check": {**compare(run["official"], averages),
                                                                **compare_items(run["items"], records, averages)}})
    return {"benchmark": "agenticlu" if agenticlu else "helmet", "predictions": str(path),
            "judge": judge.settings() if judge is not None else None,
            "nli_judge": nli.settings() if nli is not None else None,
            "units": units, "collect": collect(table_in), "outputs": outputs}
