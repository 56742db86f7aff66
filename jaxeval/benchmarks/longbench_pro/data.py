"""Loading LongBench Pro records: the dataset's one JSON array, locally or from the hub.

Sources: a local `longbench_pro.json` (or a folder holding it, or a `dataset/` folder as the
official harness keeps it), a JSONL file of the same records, or the hub id
"caskcsg/LongBench-Pro" (its file through huggingface_hub, cached; network the first time).
Every record is checked against the schema; a bad one raises DataError naming the file, the
record id and the field.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from jaxeval.io.rows import read_jsonl_file
from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS, HUB_FILE, HUB_ID, SECONDARY_TASKS, SHIPPED_SAMPLE
from jaxeval.errors import DataError
from jaxeval.io.inputs import read_json

_STRING_FIELDS = ("id", "context", "language", "token_length", "primary_task", "secondary_task",
                  "contextual_requirement", "question_nonthinking", "question_thinking", "difficulty")


@dataclasses.dataclass(frozen=True)
class LongBenchProRecord:
    id: str
    context: str
    language: str  # "English" | "Chinese"
    token_length: str  # bucket label "8k" ... "256k"
    primary_task: str
    secondary_task: str
    contextual_requirement: str
    question_nonthinking: str
    question_thinking: str
    answer: tuple[str, ...]
    difficulty: str
    origin: str = dataclasses.field(default="", compare=False)  # file and index, for messages

    @property
    def is_zh(self) -> bool:
        return self.language == "Chinese"

    def labels(self) -> dict[str, str]:
        """The fields the summary breaks scores down by (plus the secondary task)."""
        return {"token_length": self.token_length, "contextual_requirement": self.contextual_requirement,
                "difficulty": self.difficulty, "primary_task": self.primary_task, "language": self.language,
                "secondary_task": self.secondary_task}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def validate_record(record: Any, where: str) -> None:
    """Raise DataError naming `where`, the record's id and the offending field."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {_type_name(record)}")
    if isinstance(record.get("id"), str):
        where = f"{where} (id '{record['id']}')"
    for field in _STRING_FIELDS:
        if field not in record:
            raise DataError(f"{where}: missing field '{field}'")
        if not isinstance(record[field], str):
            raise DataError(f"{where}: field '{field}' must be a string, got {_type_name(record[field])}")
    answer = record.get("answer")
    if not isinstance(answer, list) or not answer or not all(isinstance(a, str) for a in answer):
        raise DataError(f"{where}: field 'answer' must be a non-empty list of strings, got {answer!r:.80}")
    for field in ("language", "token_length", "contextual_requirement", "difficulty", "primary_task"):
        if record[field] not in DIMENSIONS[field]:
            raise DataError(f"{where}: field '{field}' is {record[field]!r}; expected one of "
                            f"{', '.join(DIMENSIONS[field])}")
    task = SECONDARY_TASKS.get(record["secondary_task"])
    if task is None:
        raise DataError(f"{where}: field 'secondary_task' is {record['secondary_task']!r}, not a LongBench Pro task")
    if task.primary != record["primary_task"]:
        raise DataError(f"{where}: field 'primary_task' is {record['primary_task']!r} but secondary task "
                        f"{task.name!r} belongs to {task.primary!r}")


def to_record(raw: dict, where: str) -> LongBenchProRecord:
    validate_record(raw, where)
    fields = {name: raw[name] for name in _STRING_FIELDS}
    return LongBenchProRecord(**fields, answer=tuple(raw["answer"]), origin=where)


def read_jsonl(path: Path) -> list[tuple[Any, str]]:
    """(row, "FILE, line N") for every non-blank line."""
    return list(read_jsonl_file(path))


def _read_rows(path: Path) -> list[tuple[Any, str]]:
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(f"{path}: expected one JSON array of records, got {_type_name(data)}")
    return [(row, f"{path}, record {index}") for index, row in enumerate(data)]


def resolve_data_path(data: str | Path) -> Path:
    """The local file for `data`: a file, a folder holding longbench_pro.json, or the hub id."""
    path = Path(data)
    if path.is_dir():
        for candidate in (path / HUB_FILE, path / "dataset" / HUB_FILE):
            if candidate.is_file():
                return candidate
        raise DataError(f"{path}: folder has no {HUB_FILE} (nor dataset/{HUB_FILE})")
    if path.is_file():
        return path
    if str(data) == HUB_ID:
        try:
            from huggingface_hub import hf_hub_download
            return Path(hf_hub_download(HUB_ID, HUB_FILE, repo_type="dataset"))
        except Exception as error:
            raise DataError(f"{HUB_ID}: fetching {HUB_FILE} from the Hugging Face hub failed "
                            f"({type(error).__name__}: {error}); pass a local copy instead") from None
    raise DataError(f"{data}: no such file or folder (expected {HUB_FILE}, a folder holding it, or '{HUB_ID}')")


def load_records(data: str | Path = SHIPPED_SAMPLE) -> list[LongBenchProRecord]:
    """Every record of the dataset at `data`, validated, in file order; ids must be unique."""
    path = resolve_data_path(data)
    records, seen = [], {}
    for raw, where in _read_rows(path):
        record = to_record(raw, where)
        if record.id in seen:
            raise DataError(f"{where} (id '{record.id}'): field 'id' repeats {seen[record.id]}")
        seen[record.id] = where
        records.append(record)
    if not records:
        raise DataError(f"{path}: no records")
    return records
