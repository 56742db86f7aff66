"""Two local CPU processes under jax.distributed: the samples are split between them, each
journals its own share, and only process 0 writes results equal to a one-process run's."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from jaxeval.run.schema import strip_volatile

JOB = Path(__file__).parent / "synthetic_job.py"
FLAGS = ["--output_path", "out", "--batch_size", "1"]  # batch 1: a sample's value is independent of its company


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(folder: Path, coordinator: str | None = None, index: int = 0) -> subprocess.Popen:
    env = {**os.environ, "JAXEVAL_PROGRESS": "0", "JAX_PLATFORMS": "cpu"}
    if coordinator:
        env.update(JAXEVAL_COORDINATOR=coordinator, JAXEVAL_NUM_PROCESSES="2", JAXEVAL_PROCESS_ID=str(index),
                   SYNTHETIC_CHUNK_BYTES="256")  # records gathered in many pieces
    return subprocess.Popen([sys.executable, str(JOB), *FLAGS], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _keys(path: Path) -> list[str]:
    return [json.loads(line)["key"] for line in path.read_text().splitlines()[1:]]


def test_two_processes_split_the_samples_and_only_process_0_writes(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    single = _run(tmp_path / "one")
    assert single.wait(120) == 0, single.stdout.read()
    address = f"127.0.0.1:{_free_port()}"
    jobs = [_run(tmp_path / "two", address, index) for index in range(2)]
    outputs = [job.communicate(timeout=180)[0] for job in jobs]
    assert [job.returncode for job in jobs] == [0, 0], outputs
    assert "wrote" in outputs[0] and "wrote" not in outputs[1]  # only process 0 writes
    journals = sorted((tmp_path / "two" / "out").glob("*.journal.jsonl"))
    assert [p.name.split(".", 1)[1] for p in journals] == ["p0-of-2.journal.jsonl", "p1-of-2.journal.jsonl"]
    first, second = (_keys(p) for p in journals)
    assert not set(first) & set(second) and len(first) == len(second) == 24
    (results,) = (tmp_path / "two" / "out").glob("*.json")
    (reference,) = (tmp_path / "one" / "out").glob("*.json")
    two, one = json.loads(results.read_text()), json.loads(reference.read_text())
    assert two["devices"]["processes"] == 2
    assert two["results"] == one["results"] and two["details"] == one["details"]
    assert two["config_hash"] == one["config_hash"]
    keep = ("journal", "devices")
    assert {k: v for k, v in strip_volatile(two).items() if k not in keep} == \
        {k: v for k, v in strip_volatile(one).items() if k not in keep}
