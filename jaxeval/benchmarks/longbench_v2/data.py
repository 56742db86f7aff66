"""LongBench v2 items: the hub dataset (THUDM/LongBench-v2, split train, through `datasets`, when
online), its data.json (a JSON array) or a JSONL file of the same objects, a folder holding
data.json, or the embedded stand-in sample (the default). Every item is checked: a bad one is a
DataError naming the file, the item and the field.
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.io.rows import read_jsonl_file
from jaxeval.errors import DataError
from jaxeval.io.inputs import read_json

HUB_ID = "THUDM/LongBench-v2"
SHIPPED_SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "longbench_v2_sample" / "data.json"
FIELDS = ("_id", "domain", "sub_domain", "difficulty", "length", "question", "choice_A", "choice_B", "choice_C",
          "choice_D", "answer", "context")  # pred.py's data_all keeps these, in this order


def require_strings(item, names, where: str) -> dict:
    """The item if it is an object with a string in each of `names`; else a DataError naming it."""
    if not isinstance(item, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(item).__name__}")
    for name in names:
        if not isinstance(item.get(name), str):
            raise DataError(f"{where} (_id {item.get('_id')!r}): missing or non-string field {name!r}")
    return item


def check_item(item, where: str) -> dict:
    require_strings(item, FIELDS, where)
    if item["answer"] not in ("A", "B", "C", "D"):
        raise DataError(f"{where} (_id {item['_id']!r}): answer must be one of A, B, C, D, got {item['answer']!r}")
    return {name: item[name] for name in FIELDS}


def _rows(source: str | Path):
    if str(source) == HUB_ID and not Path(source).exists():
        try:
            from datasets import load_dataset

            table = load_dataset(HUB_ID, split="train")
        except Exception as error:
            raise DataError(f"{HUB_ID}: cannot load from the hub ({type(error).__name__}: {error}); offline, pass "
                            "a local data.json") from None
        yield from ((dict(row), f"{HUB_ID}, row {i}") for i, row in enumerate(table))
        return
    path = Path(source)
    if path.is_dir():
        path = path / "data.json"
    if not path.is_file():
        raise DataError(f"{path}: no such file (LongBench v2 data: data.json, a JSONL file, a folder or {HUB_ID})")
    if path.suffix == ".jsonl":
        yield from read_jsonl_file(path)
        return
    items = read_json(path)
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON array of items")
    yield from ((item, f"{path}, item {i}") for i, item in enumerate(items))


def load_items(source: str | Path = SHIPPED_SAMPLE) -> list[dict]:
    items = [check_item(item, where) for item, where in _rows(source)]
    if not items:
        raise DataError(f"{source}: no LongBench v2 items")
    seen = set()
    for item in items:
        if item["_id"] in seen:
            raise DataError(f"{source}: two items share the _id {item['_id']!r}")
        seen.add(item["_id"])
    return items
