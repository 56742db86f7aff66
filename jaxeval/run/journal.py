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

import json
import os
import threading
import time

from jaxeval.errors import DataError, JaxevalError
from jaxeval.io.outputs import writing
from jaxeval.io.fs import is_local, open_fs, write_text_atomic

JOURNAL_VERSION = 1


class JournalMismatchError(JaxevalError):
    """The journal at the run's path was written by another model or with other settings."""


def _dumps(obj) -> str:
    from jaxeval.secrets import redact

    return redact(json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=True))


class Journal:
    """A per-run journal at `path` (local path or fsspec URL) for the run described by `identity`.

    identity: what makes two runs interchangeable (model identity, config hash, ...); an existing
    journal with a different identity raises JournalMismatchError naming what differs, unless it
    holds no sample (then it is replaced: a run that failed before its first sample never blocks
    the rerun). shard: (process index, process count) of a multi-host run (one journal per
    process). recover: keep every intact line of a journal damaged in the middle and drop the
    rest (`--journal recover`) instead of refusing it. notes: what opening it did, for the user.
    Thread-safe: a watchdog thread may flush it while the main thread computes (jaxeval/interrupt.py).
    """

    def __init__(self, path: str, identity: dict, *, flush_every: int = 16, flush_seconds: float = 30.0,
                 shard: tuple[int, int] = (0, 1), recover: bool = False):
        self.path = str(path)
        self.shard = shard  # (process index, count): which samples this process computes (resumable.py)
        self.identity = json.loads(_dumps(identity))
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self.recover = recover
        self.notes: list[str] = []
        self.lock = threading.Lock()
        self._fs, self._fs_path = open_fs(self.path)
        self._local = is_local(self._fs)
        self._records: dict[str, dict] = {}
        self._lines: list[str] = []  # every entry line of the file as written (non-local rewrite)
        self._pending: list[str] = []
        self._last_flush = time.monotonic()
        self.resumed = 0  # records found on disk when opened
        with writing(self.path, "journal"):
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
        with self.lock:
            self._records[key] = json.loads(line)["record"]
            self._pending.append(line)
        if len(self._pending) >= self.flush_every or time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    # -- the rest -----------------------------------------------------------------------------
    def __contains__(self, key: str) -> bool:
        return key in self._records

    def __len__(self) -> int:
        return len(self._records)

    def flush(self, lock_timeout: float = -1) -> bool:
        """Write buffered records durably (fsync locally; one atomic object write elsewhere).
        False when the lock was not had within lock_timeout seconds (-1: wait as long as it takes)."""
        if not self.lock.acquire(timeout=lock_timeout):
            return False
        try:
            self._last_flush = time.monotonic()
            if self._pending:
                with writing(self.path, "journal"):
                    self._write_pending()
        finally:
            self.lock.release()
        return True

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

    def _text(self) -> str:
        return "".join(line + "\n" for line in [self._header(), *self._lines])

    def _rewrite(self) -> None:
        if self._local:  # a whole new file (recovery): atomically, so a kill leaves the old or the new
            write_text_atomic(self._fs_path, self._text())
            return
        with self._fs.open(self._fs_path, "wb") as f:
            f.write(self._text().encode())

    def _create(self) -> None:
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

    def _open(self) -> None:
        if not self._fs.exists(self._fs_path) or self._fs.size(self._fs_path) == 0:
            return self._create()
        with self._fs.open(self._fs_path, "rb") as f:
            data = f.read()
        complete, _, torn = data.rpartition(b"\n")
        lines = complete.split(b"\n") if complete else []
        entries, damaged, torn_last = self._parse_entries(lines[1:])
        if not entries and not damaged:  # header only (or torn): nothing was journaled yet
            if lines and self._header_identity(lines[0], strict=False) not in (None, self.identity):
                self.notes.append(f"{self.path}: replaced a journal of another run that held no sample")
            self._fs.rm(self._fs_path)
            return self._create()
        identity = self._header_identity(lines[0])
        if identity is None and not self.recover:
            raise DataError(f"{self.path}, line 1: not a jaxeval journal header; rerun with --journal recover to "
                            f"keep its {len(entries)} intact samples, or move it away")
        if identity is not None:
            self._check_identity(identity)
        if damaged and not self.recover:
            raise DataError(f"{self.path}, line {damaged[0]}: not a journal entry (expected {{\"key\": ..., "
                            f"\"record\": ...}}); the journal is damaged: rerun with --journal recover to keep its "
                            f"{len(entries)} intact samples and drop {len(damaged)} damaged line(s)")
        for key, record, line in entries:
            if key not in self._records:
                self._records[key] = record
                self._lines.append(line)
        self.resumed = len(self._records)
        if damaged or identity is None:
            self._rewrite()
            self.notes.append(f"{self.path}: recovered {self.resumed} samples, dropped {len(damaged)} damaged "
                              f"line(s){'' if identity is not None else ' and rewrote its damaged header'}")
        elif torn or torn_last:
            self._drop_tail(len(complete) - len(lines[-1]) if torn_last else len(complete) + 1)

    def _parse_entries(self, lines: list[bytes]) -> tuple[list[tuple[str, dict, str]], list[int], bool]:
        """(key, record, line) of every intact entry, the line numbers of the damaged ones, and
        whether the final line does not parse (a torn write that ends in a newline: dropped, not damage)."""
        entries, damaged, torn_last = [], [], False
        for number, raw in enumerate(lines, start=2):
            try:
                line = raw.decode("utf-8")
                entry = json.loads(line)
                key, record = entry["key"], entry["record"]
                if not isinstance(key, str) or not key:
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                if number == len(lines) + 1:
                    torn_last = True
                else:
                    damaged.append(number)
                continue
            entries.append((key, record, line))
        return entries, damaged, torn_last

    def _drop_tail(self, good_end: int) -> None:
        """Cut an incomplete last line left by a kill, so the next append starts on a fresh line."""
        if self._local:
            with open(self._fs_path, "r+b") as f:
                f.truncate(good_end)
                f.flush()
                os.fsync(f.fileno())
        else:
            self._rewrite()

    def _header_identity(self, line: bytes, strict: bool = True) -> dict | None:
        """The header's identity, None when the line is no header; strict: another journal version
        is an error (else it reads as no identity)."""
        try:
            header = json.loads(line)
            version, identity = header["jaxeval_journal"], header["identity"]
        except (ValueError, KeyError, TypeError):
            return None
        if version != JOURNAL_VERSION and not strict:
            return None
        if version != JOURNAL_VERSION:
            raise JournalMismatchError(f"{self.path}: journal version {version}, this jaxeval writes "
                                       f"{JOURNAL_VERSION}; move it away or pass another --output_path")
        return identity if isinstance(identity, dict) else None

    def _check_identity(self, identity: dict) -> None:
        from jaxeval.fingerprint import describe_difference

        differing = [field for field in sorted(set(identity) | set(self.identity))
                     if identity.get(field) != self.identity.get(field)]
        if not differing:
            return
        parts = []
        for field in differing:
            there, now = identity.get(field), self.identity.get(field)
            if isinstance(there, dict) and isinstance(now, dict):
                parts.append(f"{field}: {describe_difference(there, now)} differ")
            else:
                parts.append(f"{field} is {there!r} there, {now!r} now")
        raise JournalMismatchError(f"{self.path}: journal was written for a different run ({'; '.join(parts)}); "
                                   f"it is never reused: move it away, or pass another --output_path")


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
