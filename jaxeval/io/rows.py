"""File readers shared by benchmark loaders; each row comes with its origin for error messages.

They read through jaxeval.io.inputs, the one boundary for users' files: a file that cannot be read or
is not UTF-8 is a DataError naming it (and its line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from jaxeval.errors import DataError
from jaxeval.io.inputs import describe_decode_error, open_input, parse_json, reading


def read_parquet_rows(path: Path) -> Iterator[tuple[dict, str]]:
    """(row, "FILE, row N") for every row; a corrupt file is a DataError naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except (pa.ArrowException, OSError) as error:
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    for index, row in enumerate(rows):
        yield row, f"{path}, row {index}"


def read_jsonl_rows(lines: Iterable[str | bytes], where: str) -> Iterator[tuple[Any, str]]:
    """(row, "WHERE, line N") for every non-blank line (text, or bytes decoded as UTF-8 here);
    bad JSON or bytes that are not UTF-8 are a DataError naming the line."""
    for line_number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(describe_decode_error(where, error, line_number)) from None
        if not line.strip():
            continue
        yield parse_json(line, f"{where}, line {line_number}"), f"{where}, line {line_number}"


def read_jsonl_file(path: Path | str) -> Iterator[tuple[Any, str]]:
    """read_jsonl_rows over the lines of a JSONL file."""
    with open_input(path) as handle, reading(path):
        yield from read_jsonl_rows(handle, str(path))
