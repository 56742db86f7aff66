"""The one boundary between jaxeval and the files a user gives it (model folders, data,
predictions, configs); the places it writes to are checked in jaxeval.io.outputs.

Every reader here turns OSError and UnicodeDecodeError into a jaxeval error of one line that
names the path (and the line, for text read line by line), so no user file can end a command
with a traceback.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from jaxeval.errors import CheckpointError, DataError, JaxevalError


def why(error: OSError) -> str:
    return error.strerror or type(error).__name__


def describe_decode_error(path, error: UnicodeDecodeError, line: int | None = None) -> str:
    where = f"{path}, line {line}" if line is not None else str(path)
    return f"{where}: not UTF-8 text (byte 0x{error.object[error.start]:02x} at offset {error.start})"


@contextlib.contextmanager
def reading(path, error: type[JaxevalError] = DataError, name: str = "file"):
    """Inside: OSError / UnicodeDecodeError about path become `error` naming it (name: what the
    file is, for "no such <name>")."""
    try:
        yield
    except UnicodeDecodeError as e:
        raise error(describe_decode_error(path, e)) from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, expected a file") from None
    except FileNotFoundError:
        raise error(f"{path}: no such {name}") from None
    except OSError as e:
        raise error(f"{path}: cannot be read ({why(e)})") from None


def check_regular(path, error: type[JaxevalError] = DataError) -> None:
    """A local path that exists is a regular file or a folder: opening a FIFO would wait for a
    writer forever, and a device never ends."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return  # missing or unreadable: the open says so, naming it
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise error(f"{path}: not a regular file (a FIFO, socket or device); give a file")


def open_input(path, error: type[JaxevalError] = DataError):
    """A binary file object for path; opening errors as `error` naming it."""
    check_regular(path, error)
    with reading(path, error):
        return open(path, "rb")


def read_bytes(path, error: type[JaxevalError] = DataError) -> bytes:
    check_regular(path, error)
    with reading(path, error):
        return Path(path).read_bytes()


def read_text(path, error: type[JaxevalError] = DataError, name: str = "file") -> str:
    """The UTF-8 text of a local path or an fsspec URL."""
    from jaxeval.io.fs import is_url, open_fs

    if not is_url(path):
        check_regular(path, error)
    with reading(path, error, name):
        if is_url(path):
            fs, inner = open_fs(path)
            with fs.open(inner, "rb") as f:
                data = f.read()
        else:
            data = Path(path).read_bytes()
        return data.decode("utf-8")


def parse_json(text: str, where, error: type[JaxevalError] = DataError):
    """The JSON value of text; one line naming `where` when it is not JSON or nests deeper than
    Python's parser can follow (a RecursionError would otherwise end the command)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{where}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None


def read_json(path, error: type[JaxevalError] = DataError, name: str = "file"):
    return parse_json(read_text(path, error, name), path, error)


MODEL_JSON_FILES = ("config.json", "generation_config.json", "tokenizer_config.json", "special_tokens_map.json")
MODEL_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt", "chat_template.jinja")


def check_model_folder(folder) -> None:
    """A model folder's JSON files are readable UTF-8 JSON and its tokenizer files are files,
    before the loaders (transformers among them) meet them."""
    for name in MODEL_JSON_FILES + MODEL_FILES:
        path = Path(folder) / name
        if path.exists() and not path.is_file():
            raise CheckpointError(f"{path}: a folder, expected a file")
        if name in MODEL_JSON_FILES and path.exists():
            data = read_json(path, CheckpointError)
            if not isinstance(data, dict):
                raise CheckpointError(f"{path}: expected a JSON object, got {type(data).__name__}")
