"""One run at a time per output path: an exclusive lock beside the run's journal.

Two copies of the same command on the same output path would compute everything twice and
interleave their journal lines. The lock file `<output>/.<run>.lock` names its holder (host,
process id, start time, command); a second run is refused with that name (exit status 2).
Locally the lock is an flock(2), which the kernel releases when its holder dies however it
dies, so the lock of a killed run is simply taken over (and said so). On object stores (gs://),
which have no locks, the file alone is the lock: a holder on this host that is no longer
running is taken over; one on another host must be removed by hand if it is stale.

Interrupted atomic writes leave `.<name>.<random>.tmp` files behind (jaxeval/io/fs.py);
the lock's holder removes those of its own run (`remove_temp_files`), since no other process
may be writing them.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
import sys
from pathlib import Path

from jaxeval.errors import ConfigError
from jaxeval.io.fs import is_local, is_url, join, open_fs


class RunLockedError(ConfigError):
    """Another process holds the run's lock."""


def _holder() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:500]}


def _describe(holder: dict | None) -> str:
    if not holder:
        return "another process"
    return (f"process {holder.get('pid')} on {holder.get('host')} (since {holder.get('started')}: "
            f"{holder.get('command')})")


def _parse(raw: bytes) -> dict | None:
    try:
        holder = json.loads(raw)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) else None


def _alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True  # someone else's process, or not a pid we can judge: assume it runs
    return True


class RunLock:
    """Held from acquire() to release(); notes says whether a dead holder's lock was taken over."""

    def __init__(self, folder: str, name: str):
        self.path = join(folder, f".{name}.lock")
        self.folder, self.name = folder, name
        self.notes: list[str] = []
        self._fs, self._inner = open_fs(self.path)
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        if is_local(self._fs):
            self._acquire_local()
        else:
            self._acquire_remote()
        return self

    def _acquire_local(self) -> None:
        import fcntl

        Path(self._inner).parent.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self._inner, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _parse(os.pread(fd, 4096, 0))
                os.close(fd)
                raise RunLockedError(f"{self.path}: this run is already going on in {_describe(holder)}; wait for it "
                                     f"to end or stop it, or pass another --output_path") from None
            try:  # the holder before us may have removed the file after we opened it: lock the one at the path
                same = os.fstat(fd).st_ino == os.stat(self._inner).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _parse(os.pread(fd, 4096, 0))
        if previous:
            self.notes.append(f"{self.path}: took over the lock of {_describe(previous)}, no longer running")
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder()).encode(), 0)
        self._fd = fd

    def _acquire_remote(self) -> None:
        if self._fs.exists(self._inner):
            with self._fs.open(self._inner, "rb") as f:
                holder = _parse(f.read())
            if holder and (holder.get("host") != socket.gethostname() or _alive(holder.get("pid"))):
                raise RunLockedError(f"{self.path}: this run is already going on in {_describe(holder)}; if that "
                                     f"process is gone, remove the lock file")
            self.notes.append(f"{self.path}: took over the lock of {_describe(holder)}, no longer running")
        with self._fs.open(self._inner, "wb") as f:
            f.write(json.dumps(_holder()).encode())

    def release(self) -> None:
        with contextlib.suppress(OSError):
            if self._fd is not None:
                os.unlink(self._inner)  # while still locked: a waiting process then locks a fresh file
                os.close(self._fd)
                self._fd = None
            elif not is_local(self._fs):
                self._fs.rm(self._inner)



def remove_temp_files(patterns) -> int:
    """Remove the files matching each (local folder, glob pattern); how many. Only for files of
    a run whose lock is held: nobody else can be writing them."""
    removed = 0
    for folder, pattern in patterns:
        if is_url(folder):
            continue
        for path in Path(folder).glob(pattern):
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
    return removed
