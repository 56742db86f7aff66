"""SIGKILL a run at random moments, rerun it each time: the final results equal an uninterrupted
run's apart from the volatile fields, and the journal never loses or duplicates a sample."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxeval.run.schema import strip_volatile

FLAGS = ["--output_path", "out", "--log_samples"]
SYNTHETIC = [sys.executable, str(Path(__file__).parent / "synthetic_job.py"), "--batch_size", "3", *FLAGS]
SYNTHETIC_KEYS = [f"synthetic/main/all/item-{i:03d}/0" for i in range(48)]
# the embedded model on two facts and two tool_calls items (each a teacher-forced 8k read)
REAL = [sys.executable, "-m", "jaxeval.cli", "run", "--limit", "2", "--agent_bench_sets", "facts,tool_calls", *FLAGS]
REAL_KEYS = [f"agent_bench/{config}/8k/{config}-8k-{i:03d}/0" for config in ("facts", "tool_calls") for i in range(2)]


def _start(folder: Path, command=SYNTHETIC) -> subprocess.Popen:
    env = {**os.environ, "JAXEVAL_PROGRESS": "0"}
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _journal(folder: Path) -> Path | None:
    found = list((folder / "out").glob("*.journal.jsonl")) if (folder / "out").is_dir() else []
    return found[0] if found else None


def _journal_keys(path: Path) -> list[str]:
    """Keys of the complete entries; a torn last line (no newline yet) is what a kill may leave."""
    data = path.read_bytes()
    complete = data[:data.rfind(b"\n") + 1].decode().splitlines()
    assert "jaxeval_journal" in json.loads(complete[0])
    return [json.loads(line)["key"] for line in complete[1:]]


def _kill_at_random(folder: Path, rng: random.Random, command, work_s: float) -> bool:
    """Start the job, wait until its journal exists, SIGKILL it after a random extra delay;
    whether the kill came before the job wrote its results."""
    job = _start(folder, command)
    deadline = time.monotonic() + 300
    while _journal(folder) is None and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, work_s))
    job.send_signal(signal.SIGKILL)
    job.wait(30)
    journal = _journal(folder)
    if journal is not None:
        keys = _journal_keys(journal)
        assert len(keys) == len(set(keys)), "a sample was journaled twice"
    return not list((folder / "out").glob("*.json"))


def _finish(folder: Path, command) -> dict:
    job = _start(folder, command)
    _, err = job.communicate(timeout=600)
    assert job.returncode == 0, err
    (results,) = (folder / "out").glob("*.json")
    return json.loads(results.read_text())


def _kill_and_resume(tmp_path: Path, kills: int, seed: int, command=SYNTHETIC, keys=SYNTHETIC_KEYS,
                     work_s: float = 0.5) -> None:
    """Kill the job `kills` times at random moments within about work_s seconds of its journal
    appearing, rerun it to the end, compare with an uninterrupted run in another folder."""
    (tmp_path / "reference").mkdir()
    reference = _finish(tmp_path / "reference", command)
    rng = random.Random(seed)
    (tmp_path / "killed").mkdir()
    interrupted = [_kill_at_random(tmp_path / "killed", rng, command, work_s) for _ in range(kills)]
    assert interrupted[0], "the first kill came after the job had finished: the test tested nothing"
    final = _finish(tmp_path / "killed", command)
    for results in (final, reference):
        results.pop("git_hash")  # in a shared checkout a commit may land between the two runs
    assert json.dumps(strip_volatile(final)) == json.dumps(strip_volatile(reference))
    journaled = _journal_keys(_journal(tmp_path / "killed"))
    assert sorted(journaled) == sorted(keys)  # every sample once: none lost, none twice
    (samples,) = (tmp_path / "killed" / "out").glob("*.samples_*.jsonl")
    assert [json.loads(line)["key"] for line in samples.read_text().splitlines()] == keys


def test_killed_three_times_then_resumed_equals_uninterrupted(tmp_path):
    _kill_and_resume(tmp_path, kills=3, seed=7)


@pytest.mark.slow
def test_killed_twenty_times_then_resumed_equals_uninterrupted(tmp_path):
    _kill_and_resume(tmp_path, kills=20, seed=20)


@pytest.mark.slow
def test_real_run_killed_twenty_times_then_resumed_equals_uninterrupted(tmp_path):
    _kill_and_resume(tmp_path, kills=20, seed=21, command=REAL, keys=REAL_KEYS, work_s=20.0)


def test_sigterm_flushes_the_journal_and_exits_143(tmp_path):
    job = _start(tmp_path)
    while (_journal(tmp_path) is None or not _journal_keys(_journal(tmp_path))) and job.poll() is None:
        time.sleep(0.005)  # until the first batch of records is flushed
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 143, err
    assert "terminated (SIGTERM); journal flushed" in err and "Traceback" not in err
    keys = _journal_keys(_journal(tmp_path))
    assert 0 < len(keys) < 48 and len(keys) == len(set(keys))
    assert _journal(tmp_path).read_bytes().endswith(b"\n")  # flushed whole, nothing torn
