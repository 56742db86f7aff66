"""SIGTERM (a TPU VM's preemption) and SIGINT end a command cleanly, whenever they arrive.

The handler only records the signal: it never raises, because Python runs handlers between
any two bytecodes, including inside a garbage-collector callback (JAX's `_xla_gc_callback`),
where a raised exception is printed as "Exception ignored" and dropped, and the run goes on.
The main thread looks at the flag at safe points (`checkpoint()`: between batches of samples,
between judge batches, between tasks) and unwinds with Terminated from there; the run flushes
its journal and exits with 128 + signal (143, 130). Work that does not reach a safe point within
the grace period (JAXEVAL_GRACE_S, default 3 s: one long compile or 128k-token read) is ended by
a watchdog thread, which flushes the open journals itself and leaves with os._exit; so does a
second signal, at once. A process that was signalled always ends with os._exit after flushing
its output (`exit_process`): an interpreter shutting down under running XLA threads may
segfault, and a scheduler must read 143, not -11.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGTERM, signal.SIGINT)
DEFAULT_GRACE_S = 3.0


class Terminated(BaseException):
    """Raised at a safe point after SIGTERM / SIGINT (BaseException: nothing swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _State:
    def __init__(self):
        self.signum: int | None = None
        self.signalled = threading.Event()  # the first signal
        self.now = threading.Event()  # a second signal: do not wait for the grace period
        self.finished = threading.Event()  # the command ended on its own
        self.journals: list = []  # objects with flush(lock_timeout) and path, flushed by the watchdog


_state = _State()


def grace_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get("JAXEVAL_GRACE_S", DEFAULT_GRACE_S)))
    except ValueError:
        return DEFAULT_GRACE_S


def signalled() -> int | None:
    """The signal received, or None."""
    return _state.signum


def checkpoint() -> None:
    """A safe point: raise Terminated in the main thread once a signal has arrived."""
    if _state.signum is not None and threading.current_thread() is threading.main_thread():
        raise Terminated(_state.signum)


def watch_journal(journal) -> None:
    """Let the watchdog flush this journal if the main thread does not reach a safe point."""
    _state.journals.append(journal)


def unwatch_journal(journal) -> None:
    if journal in _state.journals:
        _state.journals.remove(journal)


def _handler(signum, frame) -> None:
    if _state.signum is None:
        _state.signum = signum
        _state.signalled.set()
    else:
        _state.now.set()


def message(signum: int, where: str = "") -> str:
    return f"jaxeval: terminated ({signal.Signals(signum).name}){where}"


def flush_stdio() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _watchdog(state: _State, grace_s: float) -> None:
    state.signalled.wait()
    if not state.finished.is_set():
        state.now.wait(grace_s)
    if state.finished.is_set():
        return
    flushed = [j.path for j in list(state.journals) if j.flush(lock_timeout=2.0)]
    where = f"; journal flushed to {', '.join(flushed)}; rerun the same command to resume" if flushed else ""
    print(message(state.signum, f" after a {grace_s:g} s grace period{where}"), file=sys.stderr)
    exit_process(128 + state.signum)


@contextlib.contextmanager
def handle_signals():
    """Within: SIGTERM / SIGINT set the flag (main thread only: elsewhere signals stay as they are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _state
    _state = _State()
    previous = {signum: signal.signal(signum, _handler) for signum in SIGNALS}
    state = _state
    threading.Thread(target=_watchdog, args=(state, grace_seconds()), name="jaxeval-signal-watchdog",
                     daemon=True).start()
    try:
        yield
    finally:
        state.finished.set()
        state.signalled.set()  # let the watchdog end
        state.now.set()
        for signum, old in previous.items():
            signal.signal(signum, old)


def exit_process(code: int) -> None:
    """After a signal: flush stdout / stderr and end the process now (no interpreter shutdown)."""
    flush_stdio()
    os._exit(code)
