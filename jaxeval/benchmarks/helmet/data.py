"""Reading HELMET's released data files and checking every record.

`data` is a folder in the released layout (the unpacked data.tar.gz of princeton-nlp/HELMET:
`data/{kilt,msmarco,json_kv,ruler,alce,...}/...`, or that `data/` folder itself), or the hub
id "princeton-nlp/HELMET" (data.tar.gz through huggingface_hub, unpacked once into its cache;
about 34 GB). A config's test file "data/kilt/x.jsonl" resolves to DATA/data/kilt/x.jsonl or
DATA/kilt/x.jsonl.

LongQA, summarisation and ICL come from live hub datasets upstream (narrativeqa,
infinitebench, multi_lexsum, the ICL label sets); jaxeval reads them as prepared JSONL files
`DATA/prepared/<dataset name>.jsonl` with the fields of HELMET's mapped rows (context,
question, answer, demo or demos; options for MC; keypoints and expert_summary for the
summarisation judge).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from jaxeval.io.rows import read_jsonl_file
from jaxeval.errors import DataError
from jaxeval.io.inputs import read_json

HUB_ID = "princeton-nlp/HELMET"


def resolve_data_root(data: str | Path) -> Path:
    if str(data) == HUB_ID:
        return _hub_data_root()
    root = Path(data)
    if not root.is_dir():
        raise DataError(f"{data}: not a HELMET data folder (expected the released layout, data/kilt/... etc.)")
    return root


def _hub_data_root() -> Path:
    import tarfile

    from huggingface_hub import hf_hub_download

    try:
        archive = Path(hf_hub_download(HUB_ID, "data.tar.gz", repo_type="dataset"))
    except Exception as e:
        raise DataError(f"{HUB_ID}: downloading data.tar.gz failed ({type(e).__name__}: {e})") from None
    target = archive.parent / "unpacked"
    if not (target / ".complete").is_file():
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        (target / ".complete").write_text("ok\n")
    return target


def resolve_file(root: Path, relative: str) -> Path:
    rel = Path(relative)
    candidates = [root / rel]
    if rel.parts and rel.parts[0] == "data":
        candidates.append(root.joinpath(*rel.parts[1:]))
    for path in candidates:
        if path.is_file():
            return path
    raise DataError(f"{candidates[0]}: HELMET data file not found under {root}")


def read_records(path: Path) -> Iterator[tuple[dict, str]]:
    """(record, "FILE, line N") of a JSONL file, or of the "data" list of a .json file."""
    if path.suffix == ".json":
        raw = read_json(path)
        rows = raw.get("data", raw) if isinstance(raw, dict) else raw
        if not isinstance(rows, list):
            raise DataError(f"{path}: expected a list of records (or {{\"data\": [...]}})")
        for index, row in enumerate(rows):
            yield row, f"{path}, record {index}"
        return
    yield from read_jsonl_file(path)


def _name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _str_list(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(x, str) for x in value)


def _check(record: dict, field: str, ok, expected: str, where: str) -> None:
    if field not in record:
        raise DataError(f"{where}: field '{field}' missing")
    if not ok(record[field]):
        raise DataError(f"{where}: field '{field}' must be {expected}, got {_name(record[field])}")


def _is_str(v) -> bool:
    return isinstance(v, str)


def _docs(fields: tuple[str, ...]):
    return lambda v: isinstance(v, list) and all(isinstance(d, dict) and all(f in d for f in fields) for d in v)


def validate_record(family: str, dataset: str, record: Any, where: str) -> None:
    """Raise DataError naming `where`, the record's id and the field when `record` is off."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {_name(record)}")
    for key in ("id", "qid", "_id"):
        if isinstance(record.get(key), (str, int)):
            where = f"{where} ({key} {record[key]!r})"
            break
    if family == "json_kv":
        _check(record, "context", _is_str, "a string", where)
        _check(record, "question", _is_str, "a string", where)
        _check(record, "answer", _str_list, "a non-empty list of strings", where)
        _check(record, "num_kvs", lambda v: isinstance(v, int), "an integer", where)
        _check(record, "demos", lambda v: isinstance(v, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in v),
            "a list of [key, value] string pairs", where)
    elif family == "ruler":
        _check(record, "context", _is_str, "a string", where)
        if not any(isinstance(record.get(k), str) for k in ("query", "question")):
            raise DataError(f"{where}: field 'query' (or 'question') missing or not a string")
        gold = "answer" if "answer" in record else "outputs"
        _check(record, gold, _str_list, "a non-empty list of strings", where)
        if "niah" in dataset:
            _check(record, "type_needle_v", _is_str, "a string", where)
        if "_vt" in dataset:
            _check(record, "num_v", lambda v: isinstance(v, (int, str)), "an integer", where)
    elif family == "rag":
        _check(record, "question", _is_str, "a string", where)
        _check(record, "answers", _str_list, "a non-empty list of strings", where)
        _check(record, "ctxs", _docs(("title", "text")), "a list of {title, text} objects", where)
        if "popqa" in dataset:
            _check(record, "s_pop", lambda v: isinstance(v, (int, float)) and v > 0, "a positive number", where)
    elif family == "rerank":
        _check(record, "qid", _is_str, "a string", where)
        _check(record, "query", _is_str, "a string", where)
        _check(record, "ctxs", lambda v: bool(v) and _docs(("id", "text", "label"))(v),
               "a non-empty list of {id, text, label} objects", where)
    elif family == "alce":
        _check(record, "question", _is_str, "a string", where)
        _check(record, "docs", _docs(("title", "text")), "a list of {title, text} objects", where)
        if "asqa" in dataset:
            _check(record, "qa_pairs", lambda v: isinstance(v, list) and bool(v) and all(
                isinstance(p, dict) and _str_list(p.get("short_answers")) for p in v),
                "a non-empty list of {short_answers: [str]} objects", where)
        else:
            _check(record, "answers", lambda v: isinstance(v, list) and bool(v) and all(_str_list(a) for a in v),
                   "a non-empty list of alias lists", where)
    else:  # prepared LongQA / summarisation / ICL rows
        _check(record, "context", _is_str, "a string", where)
        _check(record, "question", _is_str, "a string", where)
        _check(record, "answer", lambda v: _is_str(v) or _str_list(v), "a string or a list of strings", where)
        if family == "infbench_choice_eng":
            _check(record, "options", _is_str, "the rendered A-D option lines", where)


def load_records(path: Path, family: str, dataset: str) -> list[dict]:
    records = []
    for record, where in read_records(path):
        validate_record(family, dataset, record, where)
        records.append(dict(record, _origin=where))
    if not records:
        raise DataError(f"{path}: no records")
    return records
