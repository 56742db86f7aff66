"""Progress when stderr is not a terminal: plain lines at an interval, not bars (a run piped to a file)."""

from __future__ import annotations

import time

from jaxeval import progress as progress_module
from jaxeval.progress import progress


def test_lines_when_stderr_is_not_a_terminal(monkeypatch, capsys):
    monkeypatch.delenv("JAXEVAL_PROGRESS", raising=False)
    monkeypatch.setenv("JAXEVAL_PROGRESS_EVERY", "1")
    clock = iter(range(0, 100, 1))
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: float(next(clock)))
    with progress(desc="helmet judge", total=4, unit="prompt") as bar:
        for _ in range(4):
            bar.update()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("helmet judge: 1/4 prompt (25%)") and "min left" in lines[0]
    assert lines[-1].startswith("helmet judge: 4/4 prompt (100%)") and lines[-1].endswith("done")


def test_a_short_step_prints_nothing_and_progress_0_turns_lines_off(monkeypatch, capsys):
    monkeypatch.delenv("JAXEVAL_PROGRESS", raising=False)
    assert list(progress(range(3), desc="quick")) == [0, 1, 2]
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setenv("JAXEVAL_PROGRESS_EVERY", "1")
    for _ in progress(range(2), desc="off"):
        time.sleep(0.01)
    assert capsys.readouterr().err == ""
