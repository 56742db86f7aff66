"""File readers shared by benchmark loaders; each row comes with its origin for error messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from jaxeval.errors import DataError


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


def read_jsonl_rows(lines: Iterable[str], where: str) -> Iterator[tuple[Any, str]]:
    """(row, "WHERE, line N") for every non-blank line; bad JSON is a DataError naming the line."""
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line), f"{where}, line {line_number}"
        except json.JSONDecodeError as error:
            raise DataError(f"{where}, line {line_number}: not valid JSON ({error.msg})") from None
