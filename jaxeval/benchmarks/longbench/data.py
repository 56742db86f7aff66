"""Loading LongBench records: a local folder of the official JSONL files, data.zip, or the hub.

The canonical form is the dataset repo's data.zip, holding `data/<config>.jsonl` for the 34
configs (`qasper`, ..., `qasper_e`, ...). `datasets` >= 4 no longer runs the repo's loading
script, so jaxeval reads the JSONL itself:
- a folder with `<config>.jsonl` files (or a `data/` folder of them: data.zip unpacked);
- a folder with `<config>/test-*.parquet` (the per-config Parquet files the hub also serves);
- a data.zip file;
- the hub id "THUDM/LongBench": its data.zip through huggingface_hub (cached; needs network
  the first time).
Record order is kept: it does not change a score, but it makes diffs against reference
predictions line up.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
from pathlib import Path
from typing import Any, Iterator

from jaxeval.benchmarks.longbench.tasks import CONFIGS, HUB_ID, TASKS, dataset_of_config
from jaxeval.io.rows import read_jsonl_file, read_jsonl_rows, read_parquet_rows
from jaxeval.errors import DataError

_HUB_ID_PATTERN = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# Retrieval golds must name their paragraph, else the official scorer fails on them.
GOLD_PARAGRAPH = {"passage_retrieval_en": re.compile(r"Paragraph (\d+)"),
                  "passage_retrieval_zh": re.compile(r"段落(\d+)")}


@dataclasses.dataclass(frozen=True)
class LongBenchRecord:
    id: str  # the record's `_id`
    input: str  # question or query ("" for sets whose template has no {input})
    context: str
    answers: tuple[str, ...]
    length: int  # words (en, code) or characters (zh), precomputed upstream; only LongBench-E reads it
    dataset: str
    language: str
    all_classes: tuple[str, ...] | None  # trec and lsht only
    config: str  # the config it was loaded as ("qasper" or "qasper_e")
    index: int  # position in its file: with the id, the record's stable key
    origin: str = dataclasses.field(default="", compare=False)  # file and line, for messages


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def validate_record(record: Any, config: str, where: str) -> None:
    """Raise DataError naming `where`, the record's `_id` and the field when `record` is off."""
    if not isinstance(record, dict):
        raise DataError(f"{where}: expected a JSON object, got {_type_name(record)}")
    if isinstance(record.get("_id"), str):
        where = f"{where} (_id '{record['_id']}')"

    def fail(field: str, problem: str) -> None:
        raise DataError(f"{where}, field '{field}': {problem}")

    for field in ("input", "context", "dataset", "language", "_id"):
        if field not in record:
            fail(field, "missing")
        if not isinstance(record[field], str):
            fail(field, f"expected a string, got {_type_name(record[field])}")
    length = record.get("length", ...)
    if length is ...:
        fail("length", "missing")
    if not isinstance(length, int) or isinstance(length, bool):
        fail("length", f"expected an integer, got {_type_name(length)}")
    answers = record.get("answers")
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        fail("answers", f"expected a list of strings, got {_type_name(answers)}")
    if not answers:
        fail("answers", "empty; every record needs at least one gold answer")
    if "all_classes" not in record:
        fail("all_classes", "missing (null for sets other than trec and lsht)")
    classes = record["all_classes"]
    if classes is not None and (not isinstance(classes, list) or not all(isinstance(c, str) for c in classes)):
        fail("all_classes", f"expected null or a list of strings, got {_type_name(classes)}")
    dataset = dataset_of_config(config)
    if TASKS[dataset].metric == "classification_score" and not classes:
        fail("all_classes", f"{dataset} is scored against its class list, which is missing or empty")
    if dataset in GOLD_PARAGRAPH:
        for index, answer in enumerate(answers):
            if not GOLD_PARAGRAPH[dataset].search(answer):
                fail(f"answers[{index}]", f"{answer!r} does not name a paragraph as "
                                          f"'{GOLD_PARAGRAPH[dataset].pattern}' expects")


def _record(raw: dict, config: str, index: int, origin: str) -> LongBenchRecord:
    validate_record(raw, config, origin)
    classes = raw["all_classes"]
    return LongBenchRecord(
        id=raw["_id"], input=raw["input"], context=raw["context"], answers=tuple(raw["answers"]),
        length=raw["length"], dataset=raw["dataset"], language=raw["language"],
        all_classes=None if classes is None else tuple(classes), config=config, index=index,
        origin=origin)


def _check_config(config: str) -> None:
    if config not in CONFIGS:
        raise DataError(f"unknown LongBench config '{config}'; available: {', '.join(CONFIGS)}")


def load_config(data: str | Path, config: str) -> list[LongBenchRecord]:
    """Every record of one config ("qasper", "qasper_e", ...), validated, in file order.

    data: a folder (JSONL files, data/ folder or Parquet configs), a data.zip, or a hub id.
    """
    _check_config(config)
    source = Path(data)
    if source.is_dir():
        rows = _read_folder(source, config)
    elif source.is_file():
        if not zipfile.is_zipfile(source):
            raise DataError(f"{source}: expected a folder of <config>.jsonl files or LongBench's "
                            f"data.zip, got another kind of file")
        rows = _read_zip(source, config)
    elif isinstance(data, str) and _HUB_ID_PATTERN.fullmatch(data) and not data.startswith("."):
        rows = _read_zip(download_data_zip(data), config)
    else:
        raise DataError(f"{data}: no such folder or file, and not a hub id (owner/name)")
    records = [_record(raw, config, index, origin) for index, (raw, origin) in enumerate(rows)]
    if not records:  # would otherwise fail only when scored, after everything else was generated
        raise DataError(f"{data}: LongBench config '{config}' holds no records")
    return records


def download_data_zip(repo_id: str = HUB_ID) -> Path:
    """The hub dataset's data.zip, from the huggingface_hub cache or downloaded into it."""
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo_id=repo_id, filename="data.zip", repo_type="dataset"))
    except Exception as error:  # offline, gated, missing: the user needs the one line
        raise DataError(f"{repo_id}: could not fetch data.zip from the Hugging Face hub "
                        f"({type(error).__name__}: {error}); download it once, or pass a local "
                        f"folder of <config>.jsonl files") from None


def _read_folder(folder: Path, config: str) -> Iterator[tuple[Any, str]]:
    for candidate in (folder / f"{config}.jsonl", folder / "data" / f"{config}.jsonl"):
        if candidate.is_file():
            yield from read_jsonl_file(candidate)
            return
    parquet = sorted((folder / config).glob("test-*.parquet")) if (folder / config).is_dir() else []
    if not parquet:
        raise DataError(f"{folder}: no {config}.jsonl (nor data/{config}.jsonl, nor "
                        f"{config}/test-*.parquet) for LongBench config '{config}'")
    yield from _read_parquet(parquet)


def _read_parquet(paths: list[Path]) -> Iterator[tuple[Any, str]]:
    for path in paths:
        yield from read_parquet_rows(path)


def _read_zip(path: Path, config: str) -> Iterator[tuple[Any, str]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise DataError(f"{path}: not a readable zip file ({error})") from None
    with archive:
        names = set(archive.namelist())
        member = next((name for name in (f"data/{config}.jsonl", f"{config}.jsonl") if name in names), None)
        if member is None:
            raise DataError(f"{path}: no data/{config}.jsonl inside for LongBench config '{config}'")
        with archive.open(member) as raw:
            yield from read_jsonl_rows(raw, f"{path}:{member}")
