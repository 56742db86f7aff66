"""The places jaxeval writes to, checked before any work is done: an output folder that cannot
be created or written, and an existing path a command must not overwrite, are one line and exit
status 2; an OSError while writing is one line naming the file."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from jaxeval.errors import ConfigError
from jaxeval.io.fs import is_url
from jaxeval.io.inputs import why


def check_output_folder(folder, what: str = "--output_path", create: bool = True) -> None:
    """A local output folder can be written: created (create) or else its nearest existing
    ancestor a writable folder; one line naming it when not."""
    if is_url(folder):
        return  # object stores: the first write says it
    path = Path(folder)
    if create:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            pass  # named below
        except OSError as e:
            raise ConfigError(f"{what} {folder}: cannot create this folder ({why(e)})") from None
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "exists and is not a folder" if existing == path else f"{existing} is a file, not a folder"
        raise ConfigError(f"{what} {folder}: {where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {folder}: {'this folder' if existing == path else existing} is not writable")


JOURNAL_SUFFIX = ".journal.jsonl"  # jaxeval.run.config.journal_path names every journal so
JOURNAL_MARK = b'"jaxeval_journal"'  # and its header line holds this key (jaxeval.run.journal)


def is_journal(path: Path) -> bool:
    """Whether an existing file is a run's journal (by its name or its header line)."""
    if path.name.endswith(JOURNAL_SUFFIX):
        return True
    try:
        with open(path, "rb") as f:
            return JOURNAL_MARK in f.readline(1 << 16)
    except OSError:
        return False


def check_output_file(path, what: str = "--out", overwrite: bool = True, create: bool = True,
                      inputs=()) -> None:
    """A file destination: its folder writable, and (overwrite False) nothing at the path yet.
    Never, whatever overwrite says: a path that exists and is not a regular file (a FIFO would
    block the write forever), a run's journal (the run could no longer resume), or one of the
    command's own input files (inputs: e.g. --reference)."""
    if is_url(path):
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{what} {path}: is a folder, expected a file path")
    if target.exists() and not target.is_file():
        raise ConfigError(f"{what} {path}: exists and is not a regular file (a FIFO, socket or device)")
    if target.is_file():
        if is_journal(target):
            raise ConfigError(f"{what} {path}: is a run's journal; writing there would lose the run "
                              f"(choose another path)")
        for given in inputs:
            if given and not is_url(given) and Path(given).is_file() and os.path.samefile(target, given):
                raise ConfigError(f"{what} {path}: is the input file {given}; choose another path")
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
        raise ConfigError(f"{what} {path}: cannot be written ({why(e)})") from None
