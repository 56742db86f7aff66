"""Result files are written atomically: a reader never sees half a file, a crash never leaves one."""

from __future__ import annotations

import json
from pathlib import Path

from jaxeval.io.fs import is_url, write_text_atomic


def write_json_atomic(path: str | Path, data) -> Path | str:
    """data as indented JSON at path (local: temp + fsync + rename; a URL: one object write)."""
    written = write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, allow_nan=True) + "\n")
    return written if is_url(path) else Path(written)
