"""SIGTERM / SIGINT at any moment end a run with 143 / 130 and a flushed journal; one run per
output path (a second is refused naming the first, a dead one's lock is taken over); temp
files of interrupted writes are removed by the next run."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxeval import interrupt
from jaxeval.run.lock import RunLock, RunLockedError

SYNTHETIC = [sys.executable, str(Path(__file__).parent / "synthetic_job.py"), "--batch_size", "4",
             "--output_path", "out"]


def _start(folder: Path, **env) -> subprocess.Popen:
    environment = {**os.environ, "JAXEVAL_PROGRESS": "0", **{k: str(v) for k, v in env.items()}}
    return subprocess.Popen(SYNTHETIC, cwd=folder, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(condition, job: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert job.poll() is None, job.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _journal_lines(folder: Path) -> list[str]:
    found = list((folder / "out").glob("*.journal.jsonl"))
    return found[0].read_text().splitlines() if found else []


def _ended(job: subprocess.Popen, sent: float) -> tuple[int, str, float]:
    _, err = job.communicate(timeout=60)
    return job.returncode, err, time.monotonic() - sent


def test_a_signal_inside_a_gc_callback_is_not_swallowed(monkeypatch):
    """Handlers run inside gc callbacks too (JAX has one): the flag survives, checkpoint() acts on it."""
    monkeypatch.setenv("JAXEVAL_GRACE_S", "60")

    def callback(phase, info):
        if phase == "start":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)  # the handler runs here, inside the collector
    with interrupt.handle_signals():
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        assert interrupt.signalled() == signal.SIGTERM
        with pytest.raises(interrupt.Terminated) as stop:
            interrupt.checkpoint()
    assert stop.value.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_between_batches_flushes_and_exits(tmp_path, signum, code):
    job = _start(tmp_path)
    _wait_for(lambda: len(_journal_lines(tmp_path)) > 1, job)
    job.send_signal(signum)
    returncode, err, _ = _ended(job, time.monotonic())
    assert returncode == code and "Traceback" not in err and "journal flushed" in err
    keys = [json.loads(line)["key"] for line in _journal_lines(tmp_path)[1:]]
    assert 0 < len(keys) < 48 and len(keys) == len(set(keys))


def test_work_that_reaches_no_safe_point_ends_after_the_grace_period(tmp_path):
    """A batch of 40 s (one long read): the watchdog flushes the journal and exits 143 after 1 s."""
    job = _start(tmp_path, SYNTHETIC_SECONDS_PER_SAMPLE=10, JAXEVAL_GRACE_S=1)
    _wait_for(lambda: len(_journal_lines(tmp_path)) == 1, job)
    time.sleep(0.3)
    sent = time.monotonic()
    job.send_signal(signal.SIGTERM)
    returncode, err, took = _ended(job, sent)
    assert returncode == 143 and took < 10, err
    assert "after a 1 s grace period; journal flushed" in err and "Traceback" not in err


@pytest.mark.parametrize("load_s, grace_s, expected", [
    (30, 1, "grace period"), pytest.param(1.5, 10, "before its first sample", marks=pytest.mark.slow)])
def test_a_signal_during_model_load_exits_143(tmp_path, load_s, grace_s, expected):
    job = _start(tmp_path, SYNTHETIC_LOAD_SECONDS=load_s, JAXEVAL_GRACE_S=grace_s)
    _wait_for(lambda: (tmp_path / "out").is_dir() and list((tmp_path / "out").glob(".*.lock")), job)
    time.sleep(0.5)  # the lock is taken just before the load starts
    sent = time.monotonic()
    job.send_signal(signal.SIGTERM)
    returncode, err, took = _ended(job, sent)
    assert returncode == 143 and expected in err and "Traceback" not in err and took < 10, err
    assert not _journal_lines(tmp_path)  # nothing was journaled


@pytest.fixture
def synthetic(monkeypatch, tmp_path):
    """The synthetic run in this process, on tmp_path/out; returns (exit code, stderr)."""
    import synthetic_job

    from jaxeval.cli import main

    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)

    def run(capsys) -> tuple[int, str]:
        code = main(["run", "--model", "synthetic-model", "--tasks", "synthetic", "--output_path",
                     str(tmp_path / "out")])
        return code, capsys.readouterr().err
    return run


HOLD_LOCK = """
import sys, time
from jaxeval.run.lock import RunLock
RunLock(sys.argv[1], sys.argv[2]).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_run_on_the_same_output_path_is_refused_naming_the_first(tmp_path, synthetic, capsys):
    assert synthetic(capsys)[0] == 0
    (results,) = (tmp_path / "out").glob("*.json")
    stem = results.name.rsplit("-", 1)[0]  # <model>-<tasks>-<config hash>: the lock's name
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path / "out"), stem],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    code, err = synthetic(capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"already going on in process {holder.pid} on " in err
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    code, err = synthetic(capsys)  # the dead holder's lock is taken over
    assert code == 0 and f"took over the lock of process {holder.pid}" in err, err
    assert not list((tmp_path / "out").glob(".*.lock"))  # released at the end


def test_lock_of_the_same_run_in_this_process_is_refused(tmp_path):
    lock = RunLock(str(tmp_path), "run").acquire()
    with pytest.raises(RunLockedError, match=f"process {os.getpid()} on "):
        RunLock(str(tmp_path), "run").acquire()
    RunLock(str(tmp_path), "other run").acquire().release()  # another run in the same folder is fine
    lock.release()
    RunLock(str(tmp_path), "run").acquire().release()


def test_temp_files_of_interrupted_writes_are_removed_by_the_next_run(tmp_path, synthetic, capsys):
    assert synthetic(capsys)[0] == 0
    (results,) = (tmp_path / "out").glob("*.json")
    stem = results.name.rsplit("-", 1)[0]
    left = [tmp_path / "out" / f".{results.name}.x1y2.tmp", tmp_path / "out" / f".{stem}-0a0a0a0a.json.k3.tmp",
            tmp_path / "out" / f".{results.name[:-5]}.samples_synthetic.jsonl.q.tmp"]
    other = tmp_path / "out" / ".another-run-12345678-abcdef01.json.z.tmp"  # not this run's: kept
    for path in left + [other]:
        path.write_text("half")
    code, err = synthetic(capsys)
    assert code == 0 and "removed 3 temp file(s) of interrupted writes" in err
    assert not any(path.exists() for path in left) and other.exists()
