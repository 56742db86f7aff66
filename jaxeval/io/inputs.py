"""The one boundary between jaxeval and the files a user gives it (model folders, data,
predictions, configs) and the places it writes to.

Every reader here turns OSError and UnicodeDecodeError into a jaxeval error of one line that
names the path (and the line, for text read line by line), so no user file can end a command
with a traceback. Writers check a destination before any work is done: an output folder that
cannot be created or written, and an existing path a command must not overwrite, are one line
and exit status 2.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from jaxeval.errors import CheckpointError, ConfigError, DataError, JaxevalError


def _why(error: OSError) -> str:
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
        raise error(f"{path}: cannot be read ({_why(e)})") from None


def open_input(path, error: type[JaxevalError] = DataError):
    """A binary file object for path; opening errors as `error` naming it."""
    with reading(path, error):
        return open(path, "rb")


def read_bytes(path, error: type[JaxevalError] = DataError) -> bytes:
    with reading(path, error):
        return Path(path).read_bytes()


def read_text(path, error: type[JaxevalError] = DataError, name: str = "file") -> str:
    """The UTF-8 text of a local path or an fsspec URL."""
    from jaxeval.io.fs import is_url, open_fs

    with reading(path, error, name):
        if is_url(path):
            fs, inner = open_fs(path)
            with fs.open(inner, "rb") as f:
                data = f.read()
        else:
            data = Path(path).read_bytes()
        return data.decode("utf-8")


def read_json(path, error: type[JaxevalError] = DataError, name: str = "file"):
    text = read_text(path, error, name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None


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
            read_json(path, CheckpointError)


def check_output_folder(folder, what: str = "--output_path", create: bool = True) -> None:
    """A local output folder can be written: created (create) or else its nearest existing
    ancestor a writable folder; one line naming it when not."""
    from jaxeval.io.fs import is_url

    if is_url(folder):
        return  # object stores: the first write says it
    path = Path(folder)
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            pass  # named below
        except OSError as e:
            raise ConfigError(f"{what} {folder}: cannot create this folder ({_why(e)})") from None
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "exists and is not a folder" if existing == path else f"{existing} is a file, not a folder"
        raise ConfigError(f"{what} {folder}: {where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {folder}: {'this folder' if existing == path else existing} is not writable")


def check_output_file(path, what: str = "--out", overwrite: bool = True, create: bool = True) -> None:
    """A file destination: its folder writable, and (overwrite False) nothing at the path yet."""
    from jaxeval.io.fs import is_url

    if is_url(path):
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{what} {path}: is a folder, expected a file path")
    if not overwrite and target.exists():
        raise ConfigError(f"{what} {path}: already exists; remove it or choose another path")
    check_output_folder(target.parent, what=f"{what} {path}: its folder", create=create)


def score_output_folder(predictions, output_path=None) -> str:
    """Where `jaxeval score` writes: --output_path, else a new folder beside the predictions
    (`<name>_rescored`), so that no file among the predictions is ever rewritten; checked writable."""
    if output_path:
        folder = Path(output_path)
    else:
        source = Path(predictions)
        folder = source.parent / f"{source.stem if source.is_file() else source.name}_rescored"
    check_output_folder(folder, "--output_path")
    return str(folder)


@contextlib.contextmanager
def writing(path, what: str = "output"):
    """Inside: an OSError writing path becomes one line naming it."""
    try:
        yield
    except OSError as e:
        raise ConfigError(f"{what} {path}: cannot be written ({_why(e)})") from None
