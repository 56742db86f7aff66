"""The run journal: every finished sample appended to a JSONL file, so a killed run resumes.

Runners see two methods (the protocol every benchmark uses, via `getattr(args, "journal", None)`):
    get(key: str) -> dict | None      the record stored under key, or None when not done yet
    put(key: str, record: dict)       store a finished sample (JSON-serialisable dict)
Keys name benchmark, config, split, item id and sample index, e.g. "agent_bench/facts/8k/f-001/0",
"longbench_pro/{mode}/{id}/{run}". The model fingerprint and the config hash live in the file's
header line, so a journal is only ever reused by the same model with the same settings.

File layout (docs/results_schema.md, "Journal"): line 1 is the header
    {"jaxeval_journal": 1, "identity": {...}}
then one {"key": ..., "record": ...} per sample. Records are buffered and written in batches
(every `flush_every` records or `flush_seconds`), each batch fsynced. A SIGKILL can tear the last
line; opening the journal drops that incomplete line (its samples are simply recomputed), so no
sample is lost or duplicated. Local files are appended to; other fsspec filesystems (gs://,
memory://) get the whole journal rewritten per batch, since object stores cannot append and
replacing an object is atomic.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

from jaxeval.errors import DataError, JaxevalError
from jaxeval.results.storage import is_local, open_fs

JOURNAL_VERSION = 1


_writing = {"depth": 0, "deferred": None}  # the journal write in progress, and a signal's exception held back


@contextlib.contextmanager
def _journal_write():
    """Bookkeeping and file write happen together or not at all as far as a signal handler is
    concerned: an exception a handler raises through raise_between_writes() waits until the end
    (masking signals would not do: another thread may take the signal)."""
    _writing["depth"] += 1
    try:
        yield
    finally:
        _writing["depth"] -= 1
    if _writing["depth"] == 0 and _writing["deferred"] is not None:
        exc, _writing["deferred"] = _writing["deferred"], None
        raise exc


def raise_between_writes(exc: BaseException) -> None:
    """For signal handlers (jaxeval/suite.py): raise exc now, or right after the journal write
    in progress, so no record is ever written without being marked written (or twice)."""
    if _writing["depth"]:
        _writing["deferred"] = exc
        return
    raise exc


class JournalMismatchError(JaxevalError):
    """The journal at the run's path was written by another model or with other settings."""


def _dumps(obj) -> str:
    from jaxeval.secrets import redact

    return redact(json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=True))


class Journal:
    """A per-run journal at `path` (local path or fsspec URL) for the run described by `identity`.

    identity: what makes two runs interchangeable (model fingerprint, config hash, ...); an
    existing journal with a different identity raises JournalMismatchError naming the field.
    shard: (process index, process count) of a multi-host run (one journal per process).
    """

    def __init__(self, path: str, identity: dict, *, flush_every: int = 16, flush_seconds: float = 30.0,
                 shard: tuple[int, int] = (0, 1)):
        self.path = str(path)
        self.shard = shard  # (process index, count): which samples this process computes (resumable.py)
        self.identity = json.loads(_dumps(identity))
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self._fs, self._fs_path = open_fs(self.path)
        self._local = is_local(self._fs)
        self._records: dict[str, dict] = {}
        self._lines: list[str] = []  # every line of the file as written (non-local rewrite)
        self._pending: list[str] = []
        self._last_flush = time.monotonic()
        self.resumed = 0  # records found on disk when opened
        self._open()

    # -- the protocol -------------------------------------------------------------------------
    def get(self, key: str) -> dict | None:
        return self._records.get(key)

    def put(self, key: str, record: dict) -> None:
        """Store record under key; a key already stored keeps its first record (never duplicated)."""
        if not isinstance(key, str) or not key:
            raise TypeError(f"journal key must be a non-empty string, got {key!r}")
        if key in self._records:
            return
        line = _dumps({"key": key, "record": record})
        with _journal_write():
            self._records[key] = json.loads(line)["record"]
            self._pending.append(line)
        if len(self._pending) >= self.flush_every or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    # -- the rest -----------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def flush(self) -> None:
        """Write buffered records durably (fsync locally; one atomic object write elsewhere)."""
        self._last_flush = time.monotonic()
        if not self._pending:
            return
        with _journal_write():
            self._write_pending()

    def _write_pending(self) -> None:
        if self._local:
            data = "".join(line + "\n" for line in self._pending).encode()
            fd = os.open(self._fs_path, os.O_WRONLY | os.O_APPEND)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        else:
            self._lines.extend(self._pending)
            self._rewrite()
        self._pending = []

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- opening ------------------------------------------------------------------------------
    def _header(self) -> str:
        return _dumps({"jaxeval_journal": JOURNAL_VERSION, "identity": self.identity})

    def _rewrite(self) -> None:
        text = "".join(line + "\n" for line in [self._header(), *self._lines])
        with self._fs.open(self._fs_path, "wb") as f:
            f.write(text.encode())

    def _open(self) -> None:
        if not self._fs.exists(self._fs_path) or self._fs.size(self._fs_path) == 0:
            parent = self._fs._parent(self._fs_path)
            if parent:
                self._fs.makedirs(parent, exist_ok=True)
            if self._local:
                with open(self._fs_path, "w") as f:
                    f.write(self._header() + "\n")
                    f.flush()
                    os.fsync(f.fileno())
            else:
                self._rewrite()
            return
        with self._fs.open(self._fs_path, "rb") as f:
            data = f.read()
        complete, _, torn = data.rpartition(b"\n")
        lines = complete.decode("utf-8").split("\n") if complete else []
        if not lines:  # killed while writing the header: nothing was journaled yet
            self._fs.rm(self._fs_path)
            return self._open()
        self._check_header(lines[0])
        good_end = len(lines[0]) + 1  # byte offset just past the last good line
        for number, line in enumerate(lines[1:], start=2):
            try:
                entry = json.loads(line)
                key, record = entry["key"], entry["record"]
            except (ValueError, KeyError, TypeError):
                if number == len(lines):  # a torn final line that happens to end in "\n": drop it
                    torn = b"x"
                    break
                raise DataError(f"{self.path}, line {number}: not a journal entry "
                                f"(expected {{\"key\": ..., \"record\": ...}}); the journal is damaged") from None
            if key not in self._records:
                self._records[key] = record
                self._lines.append(line)
            good_end += len(line.encode("utf-8")) + 1
        self.resumed = len(self._records)
        if torn:
            self._drop_tail(good_end)

    def _drop_tail(self, good_end: int) -> None:
        """Cut an incomplete last line left by a kill, so the next append starts on a fresh line."""
        if self._local:
            with open(self._fs_path, "r+b") as f:
                f.truncate(good_end)
                f.flush()
                os.fsync(f.fileno())
        else:
            self._rewrite()

    def _check_header(self, line: str) -> None:
        try:
            header = json.loads(line)
            version, identity = header["jaxeval_journal"], header["identity"]
        except (ValueError, KeyError, TypeError):
            raise DataError(f"{self.path}, line 1: not a jaxeval journal header") from None
        if version != JOURNAL_VERSION:
            raise JournalMismatchError(f"{self.path}: journal version {version}, this jaxeval writes "
                                       f"{JOURNAL_VERSION}; move it away or pass another --output_path")
        for field in sorted(set(identity) | set(self.identity)):
            if identity.get(field) != self.identity.get(field):
                raise JournalMismatchError(
                    f"{self.path}: journal was written for a different run ({field} is "
                    f"{identity.get(field)!r} there, {self.identity.get(field)!r} now); it is never reused: "
                    f"move it away, or pass another --output_path")


def journaled(journal, key: str, compute) -> dict:
    """journal's record for key, or compute() stored under it; always the JSON round-tripped
    form, so a resumed run and an uninterrupted one score exactly the same values."""
    if journal is None:
        return json.loads(_dumps(compute()))
    record = journal.get(key)
    if record is None:
        journal.put(key, compute())
        record = journal.get(key)
    return record
