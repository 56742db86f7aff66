"""Progress bars with rate and ETA on long steps (tokenization, reads, generation, judging).

tqdm (installed with transformers and datasets) draws them on stderr when it is a terminal.
When stderr is not a terminal (a run piped to a file or a scheduler's log) a bar would be
dropped or print carriage-return garbage, so a step prints plain lines instead: one every
JAXEVAL_PROGRESS_EVERY seconds (default 60; none for a step that ends sooner) and one when it ends.
JAXEVAL_PROGRESS=0 turns both off, JAXEVAL_PROGRESS=1 forces bars on (e.g. in TPU logs).
"""

from __future__ import annotations

import os
import sys
import time

DEFAULT_EVERY_S = 60.0


def _enabled() -> bool | None:
    setting = os.environ.get("JAXEVAL_PROGRESS", "")
    if setting == "0":
        return False
    return True if setting == "1" else None  # None: tqdm decides (on for a terminal)


def progress(iterable=None, *, desc: str, total: int | None = None, unit: str = "item", initial: int = 0):
    """A tqdm bar over iterable (or a manual one with .update(n) when iterable is None);
    a silent stand-in when tqdm is missing or bars are off."""
    enabled = _enabled()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        enabled = False
    if enabled is False:
        return _Silent(iterable)
    if enabled is None and not _is_terminal(sys.stderr):
        return _Lines(iterable, desc, total, unit, initial)
    return tqdm(iterable, desc=desc, total=total, unit=unit, initial=initial, dynamic_ncols=True,
                disable=None if enabled is None else False, leave=False)


class _Silent:
    def __init__(self, iterable):
        self._iterable = iterable

    def __iter__(self):
        return iter(self._iterable)

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _every_s() -> float:
    try:
        return max(1.0, float(os.environ.get("JAXEVAL_PROGRESS_EVERY", DEFAULT_EVERY_S)))
    except ValueError:
        return DEFAULT_EVERY_S


class _Lines(_Silent):
    """Progress as a plain line every few seconds ("desc: 120/480 prompt (25%), 3.1 prompt/s, ~2 min left")."""

    def __init__(self, iterable, desc: str, total: int | None, unit: str, initial: int):
        super().__init__(iterable)
        self.desc, self.unit, self.initial, self.done = desc, unit, initial, initial
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.started = self.last = time.monotonic()
        self.every, self.printed = _every_s(), False

    def __iter__(self):
        for item in self._iterable:
            yield item
            self.update()
        self.close()

    def update(self, n: int = 1) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every:
            self._line()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.printed:  # a step that ended before its first line stays silent
            self._line("done")
            self.printed = False

    def _line(self, end: str = "") -> None:
        now = time.monotonic()
        self.last, self.printed = now, True
        rate = (self.done - self.initial) / max(now - self.started, 1e-9)
        of = f"/{self.total}" if self.total else ""
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        left = (f", ~{(self.total - self.done) / rate / 60:.1f} min left"
                if self.total and rate > 0 and self.done < self.total and not end else "")
        print(f"{self.desc}: {self.done}{of} {self.unit}{share}, {rate:.2f} {self.unit}/s{left}"
              f"{', ' + end if end else ''}", file=sys.stderr, flush=True)
