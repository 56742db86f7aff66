"""MRCR rows: from the hub dataset (openai/mrcr, through `datasets`, when online), a local folder
in its layout (`2needle/*.parquet`, `4needle/...`, or `2needle.parquet`; JSONL files of the same
rows are read too), one file, or the embedded stand-in sample (the default).

A row keeps the dataset's fields; `prompt` is the JSON text of the conversation (a list of
{"role", "content"} messages). A malformed row is a DataError naming its file and row.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from jaxeval.io.rows import read_jsonl_file, read_parquet_rows
from jaxeval.errors import DataError

HUB_ID = "openai/mrcr"
NEEDLES = (2, 4, 8)
SHIPPED_SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "mrcr_sample" / "mrcr_sample.jsonl"
ROLES = ("system", "developer", "user", "assistant")


@dataclasses.dataclass(frozen=True)
class MrcrRow:
    index: int  # position among the rows of its needle count, in file order (the journal key)
    messages: tuple[dict, ...]
    answer: str
    random_string_to_prepend: str
    n_needles: int
    fields: dict  # every field of the row as read (prompt included), for the samples file
    origin: str


def parse_messages(prompt, where: str) -> list[dict]:
    """The conversation of a row's `prompt` (JSON text, or an already-parsed list)."""
    if isinstance(prompt, str):
        try:
            prompt = json.loads(prompt)
        except json.JSONDecodeError as error:
            raise DataError(f"{where}: 'prompt' is not JSON text of a message list ({error.msg})") from None
    if not isinstance(prompt, list) or not prompt:
        raise DataError(f"{where}: 'prompt' must be a non-empty list of messages")
    for message in prompt:
        if not (isinstance(message, dict) and message.get("role") in ROLES and isinstance(message.get("content"), str)):
            raise DataError(f"{where}: every message needs a role ({', '.join(ROLES)}) and a string content")
    return prompt


def check_row(row, where: str, *, need_prompt: bool = True) -> dict:
    """The row if it has the fields grading needs (and the prompt, for a run)."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    for name in ("answer", "random_string_to_prepend"):
        if not isinstance(row.get(name), str):
            raise DataError(f"{where}: missing or non-string field {name!r}")
    needles = row.get("n_needles")
    if isinstance(needles, bool) or not isinstance(needles, int) or needles < 1:
        raise DataError(f"{where}: 'n_needles' must be a positive integer, got {needles!r}")
    if need_prompt and "prompt" not in row:
        raise DataError(f"{where}: missing field 'prompt'")
    return row


def _file_rows(path: Path):
    if path.suffix == ".parquet":
        yield from read_parquet_rows(path)
    elif path.suffix in (".jsonl", ".json"):
        yield from read_jsonl_file(path)
    else:
        raise DataError(f"{path}: not an MRCR file (.parquet or .jsonl)")


def _folder_files(folder: Path) -> list[Path]:
    files = []
    for n in NEEDLES:
        inside = folder / f"{n}needle"
        files += sorted(inside.glob("*.parquet")) + sorted(inside.glob("*.jsonl")) if inside.is_dir() else []
        files += [f for f in (folder / f"{n}needle.parquet", folder / f"{n}needle.jsonl") if f.is_file()]
    return files or sorted(folder.glob("*.parquet")) + sorted(folder.glob("*.jsonl"))


def _hub_rows(needles):
    try:
        from datasets import load_dataset
    except ImportError:
        raise DataError(f"{HUB_ID}: the hub dataset needs `datasets` (pip install datasets)") from None
    for n in needles:
        try:
            table = load_dataset(HUB_ID, data_files=f"{n}needle/*.parquet", split="train")
        except Exception as error:
            raise DataError(f"{HUB_ID}: cannot load {n}needle from the hub ({type(error).__name__}: {error}); "
                            f"offline, pass a local copy of the dataset's folder") from None
        for index, row in enumerate(table):
            yield dict(row), f"{HUB_ID} {n}needle, row {index}"


def raw_rows(source: str | Path, needles=NEEDLES):
    """(row dict, origin) of every row of the source, any needle count."""
    if str(source) == HUB_ID and not Path(source).exists():
        yield from _hub_rows(needles)
        return
    path = Path(source)
    if path.is_dir():
        files = _folder_files(path)
        if not files:
            raise DataError(f"{path}: no MRCR files (2needle/*.parquet, ... or *.jsonl)")
        for file in files:
            yield from _file_rows(file)
    elif path.is_file():
        yield from _file_rows(path)
    else:
        raise DataError(f"{path}: no such file or folder (MRCR data: a file, a folder or {HUB_ID})")


def load_rows(source: str | Path = SHIPPED_SAMPLE, needles=NEEDLES) -> list[MrcrRow]:
    """The rows of the chosen needle counts, checked; empty data is a DataError."""
    counters: dict[int, int] = {}
    rows = []
    for row, where in raw_rows(source, needles):
        check_row(row, where)
        n = row["n_needles"]
        if n not in needles:
            continue
        messages = parse_messages(row["prompt"], where)
        index = counters.get(n, 0)
        counters[n] = index + 1
        rows.append(MrcrRow(index, tuple(messages), row["answer"], row["random_string_to_prepend"], n,
                            {k: v for k, v in row.items()}, where))
    if not rows:
        raise DataError(f"{source}: no MRCR rows with {', '.join(map(str, needles))} needles")
    return rows
