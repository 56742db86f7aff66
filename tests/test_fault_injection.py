"""Fault injection: malformed inputs for every reader, and signals at scheduled phases of a run.

The fuzz gives each file a user hands jaxeval (run config, model folder, each benchmark's data,
predictions, keypoints, judge prompt, reference scores, results to report) every kind of damage
(cut short, a byte that is not UTF-8, random bytes, empty, a folder in its place, JSON of the
wrong shape): each must end the command with exit status 2 and one line, never a traceback.

The schedule SIGKILLs and SIGTERMs the embedded suite at its start, during the model load, the
compile, mid-sample, the journal's append and the results write (slow: a real run per signal),
reruns it to the end each time, and checks the final results equal an uninterrupted run's, no
sample lost or journaled twice, no temp file left, and every SIGTERM answered with 143.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxeval.cli import EMBEDDED_MODEL, main

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "jaxeval" / "assets"
LONGBENCH_PRED = Path(__file__).parent / "benchmarks/longbench/data/official_eval/pred"
DAMAGE = ("cut", "bad_byte", "random", "empty", "folder", "wrong_shape")


def damage(path: Path, kind: str, rng: random.Random) -> None:
    """Damage the file at path in place, as `kind` says."""
    data = path.read_bytes()
    path.unlink()
    if kind == "folder":
        path.mkdir()
        return
    if kind == "cut":  # inside the first record: never a whole valid file
        data = data[:max(1, min(len(data) // 3, data.find(b",") if data.find(b",") > 0 else 1))]
    elif kind == "bad_byte":
        at = rng.randrange(1, max(2, min(len(data), 200)))
        data = data[:at] + b"\xff\xfe" + data[at:]
    elif kind == "random":
        data = bytes(rng.randrange(256) for _ in range(300))
    elif kind == "empty":
        data = b""
    elif kind == "wrong_shape":
        data = b"[1, 2, 3]\n" if path.suffix != ".jsonl" else b"[1, 2, 3]\n\"text\"\n"
    path.write_bytes(data)


def _copy(source: Path, target: Path) -> Path:
    """A copy of source whose files are links (damage() replaces the one it damages by a file)."""
    if source.is_dir():
        shutil.copytree(source, target, copy_function=os.symlink)
    else:
        shutil.copy(source, target)
    return target


def _helmet_output(tmp: Path) -> Path:
    items = [{"question": "Who?", "answer": ["Ada"], "output": "Ada"}]
    path = tmp / "narrativeqa_out.json"
    path.write_text(json.dumps({"args": {"datasets": "narrativeqa_7892", "input_max_length": 8192}, "data": items}))
    return path


def _longbench_pro_predictions(tmp: Path) -> Path:
    record = json.loads((ASSETS / "longbench_pro_sample/longbench_pro_sample.json").read_text())[0]
    path = tmp / "run_inference_1-of-1.jsonl"
    path.write_text(json.dumps({**record, "prediction": "x", "reasoning_content": None, "bon_idx": 1}) + "\n")
    return path


def _results_file(tmp: Path) -> Path:
    path = tmp / "results.json"
    path.write_text(json.dumps({"schema_version": 1, "results": {}, "details": {}}))
    return path


# reader -> (prepare(tmp) -> (the command, the file in it to damage), kinds that do not apply)
READERS = {
    "run config": (lambda t: (["validate", "--config", str(_write(t / "run.yaml", "limit: 2\nsets: facts\n"))],
                              t / "run.yaml"), {"empty", "cut"}),  # an empty YAML, or "limit: 2", is a valid config
    "model config.json": (lambda t: (["validate", "--model", str(_copy(EMBEDDED_MODEL, t / "m"))],
                                     t / "m" / "config.json"), set()),
    "model tokenizer_config.json": (lambda t: (["validate", "--model", str(_copy(EMBEDDED_MODEL, t / "m"))],
                                               t / "m" / "tokenizer_config.json"), set()),
    "model tokenizer.json": (lambda t: (["validate", "--model", str(_copy(EMBEDDED_MODEL, t / "m"))],
                                        t / "m" / "tokenizer.json"), set()),
    "agent_bench parquet": (lambda t: (["validate", "--agent_bench_sets", "facts", "--agent_bench_data",
                                        str(_copy(ASSETS / "agent_bench_sample", t / "ab"))],
                                       t / "ab" / "facts" / "8k-00000-of-00001.parquet"), {"wrong_shape"}),
    "longbench data": (lambda t: (["validate", "--tasks", "longbench", "--longbench_data",
                                   str(_copy(ASSETS / "longbench_sample", t / "lb"))], t / "lb" / "qasper.jsonl"),
                       set()),
    "longbench predictions": (lambda t: (["score", "--benchmark", "longbench", "--predictions",
                                          str(_copy(LONGBENCH_PRED, t / "pred"))], t / "pred" / "qasper.jsonl"),
                              {"folder"}),  # a folder named qasper.jsonl is not a prediction file: skipped
    "longbench_pro data": (lambda t: (["validate", "--tasks", "longbench_pro", "--longbench_pro_data",
                                       str(_copy(ASSETS / "longbench_pro_sample/longbench_pro_sample.json",
                                                 t / "lbp.json"))], t / "lbp.json"), set()),
    "longbench_pro predictions": (lambda t: (["score", "--benchmark", "longbench_pro", "--predictions",
                                              str(_longbench_pro_predictions(t))], t / "run_inference_1-of-1.jsonl"),
                                  set()),
    "helmet data": (lambda t: (["validate", "--tasks", "helmet", "--helmet_categories", "rag", "--helmet_lengths", "8k",
                                "--helmet_data", str(_copy(ASSETS / "helmet_sample", t / "hd"))],
                               t / "hd" / "data" / "kilt" / "nq-dev-multikilt_1000_k50_dep6.jsonl"), set()),
    "helmet outputs": (lambda t: (["score", "--benchmark", "helmet", "--predictions", str(_helmet_output(t))],
                                  t / "narrativeqa_out.json"), set()),
    "helmet keypoints": (lambda t: (["score", "--benchmark", "helmet", "--predictions", str(_helmet_output(t)),
                                     "--helmet_keypoints", str(_write(t / "kp.jsonl", '{"id": "0", "keypoints": ["k"]}\n'))],
                                    t / "kp.jsonl"), set()),
    "judge prompt": (lambda t: (["validate", "--tasks", "helmet_agenticlu", "--helmet_agenticlu_prompt",
                                 str(_write(t / "prompt.txt", "Q: {question} G: {gold} M: {prediction}"))],
                                t / "prompt.txt"), {"cut", "empty", "wrong_shape"}),  # any UTF-8 text is a template
    "report results": (lambda t: (["report", str(_results_file(t)), "--out", str(t / "report")], t / "results.json"),
                       set()),
}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


CASES = [(reader, kind) for reader, (_, skip) in READERS.items() for kind in DAMAGE if kind not in skip]


@pytest.mark.parametrize("reader, kind", CASES, ids=[f"{r}-{k}" for r, k in CASES])
def test_every_reader_refuses_damaged_input_in_one_line(tmp_path, capsys, monkeypatch, reader, kind):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)  # score's default output folder lands here, beside its predictions
    command, target = READERS[reader][0](tmp_path)
    damage(target, kind, random.Random(f"{reader}/{kind}"))
    code = main(command)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("jaxeval: error: ") and "Traceback" not in err, err


@pytest.mark.parametrize("kind", DAMAGE)
def test_damaged_reference_scores_are_one_data_error(tmp_path, kind):
    from jaxeval.benchmarks.agent_bench.reference import load_reference
    from jaxeval.errors import DataError

    path = tmp_path / "scores.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"format": "jaxeval-agent-bench-rules-scores", "mode": "text"}, f)
    damage(path, kind, random.Random(kind))
    with pytest.raises(DataError, match=str(path)):
        load_reference(path, {}, "text", None)


# -- signals at scheduled phases of the embedded suite ---------------------------------------

SUITE = [sys.executable, "-m", "jaxeval.cli", "run", "--limit", "1", "--agent_bench_sets", "facts,tool_calls",
         "--output_path", "out", "--log_samples"]
KEYS = [f"agent_bench/{config}/8k/{config}-8k-000/0" for config in ("facts", "tool_calls")]


def _spawn(folder: Path) -> subprocess.Popen:
    env = {**os.environ, "JAXEVAL_PROGRESS": "0"}
    return subprocess.Popen(SUITE, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _out(folder: Path, pattern: str) -> list[Path]:
    return list((folder / "out").glob(pattern)) if (folder / "out").is_dir() else []


def _journal_entries(folder: Path) -> list[str]:
    found = _out(folder, "*.journal.jsonl")
    if not found:
        return []
    data = found[0].read_bytes()
    return [json.loads(line)["key"] for line in data[:data.rfind(b"\n") + 1].decode().splitlines()[1:]]


def _until(condition, job: subprocess.Popen, step: float = 0.002, timeout: float = 300) -> bool:
    """Wait for condition; False when the job ended first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if job.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


# phase -> wait until it (the job runs from a folder with a finished run's results moved away)
PHASES = {
    # 0.3 s: the flags are being parsed (before ~0.1 s the interpreter itself is starting, and has no handler yet)
    "start": lambda folder, job: time.sleep(0.3) or True,
    "model load": lambda folder, job: _until(lambda: bool(_out(folder, ".*.lock")), job) and (time.sleep(0.3) or True),
    "compile": lambda folder, job: _until(lambda: bool(_out(folder, "*.journal.jsonl")), job) and (time.sleep(0.2) or True),
    "mid-sample": lambda folder, job: _until(lambda: bool(_out(folder, "*.journal.jsonl")), job) and (time.sleep(3) or True),
    "journal append": lambda folder, job: _until(lambda: len(_journal_entries(folder)) >= 1, job),
    "results write": lambda folder, job: _until(lambda: bool(_out(folder, ".*.tmp")), job, step=0.0005),
}


def _run_to_the_end(folder: Path) -> dict:
    job = _spawn(folder)
    _, err = job.communicate(timeout=900)
    assert job.returncode == 0, err
    (results,) = _out(folder, "*.json")
    data = json.loads(results.read_text())
    data.pop("git_hash")  # a commit may land in a shared checkout between two runs
    from jaxeval.run.schema import strip_volatile

    return strip_volatile(data)


def _interrupt(folder: Path, phase: str, signum: int) -> tuple[int, str]:
    for old in _out(folder, "*.json"):  # each kill hits a run with work left to do
        old.unlink()
    job = _spawn(folder)
    PHASES[phase](folder, job)
    sent = time.monotonic()
    job.send_signal(signum)
    _, err = job.communicate(timeout=120)
    if signum == signal.SIGTERM and job.returncode == 143:
        assert time.monotonic() - sent < 15, f"{phase}: SIGTERM took {time.monotonic() - sent:.1f} s"
    return job.returncode, err


@pytest.mark.slow
def test_signals_at_every_phase_leave_results_identical_to_an_uninterrupted_run(tmp_path):
    (tmp_path / "reference").mkdir()
    reference = _run_to_the_end(tmp_path / "reference")
    folder = tmp_path / "killed"
    folder.mkdir()
    seen = []
    for phase in PHASES:
        for signum in (signal.SIGTERM, signal.SIGKILL):
            code, err = _interrupt(folder, phase, signum)
            seen.append((phase, signal.Signals(signum).name, code))
            assert "Traceback" not in err and "Exception ignored" not in err, f"{phase}: {err}"
            expected = {signal.SIGTERM: (143, 0), signal.SIGKILL: (-9, 0)}[signum]  # 0: it finished first
            assert code in expected, f"{phase} {signal.Signals(signum).name}: exit {code}\n{err}"
            keys = _journal_entries(folder)
            assert len(keys) == len(set(keys)), f"{phase}: a sample journaled twice"
    print("signals sent (phase, signal, exit status):", seen)
    assert sum(code in (143, -9) for _, _, code in seen) >= len(seen) - 2, seen  # nearly every one landed
    final = _run_to_the_end(folder)
    assert json.dumps(final, sort_keys=True) == json.dumps(reference, sort_keys=True)
    assert sorted(_journal_entries(folder)) == sorted(KEYS)
    assert not _out(folder, ".*.tmp") and not _out(folder, ".*.lock")


def test_sigterm_in_the_first_second_of_compute_exits_143_and_resumes_identically(tmp_path, monkeypatch):
    """The quick case: the synthetic run (real CLI, journal and writer) stopped right after its
    journal opens, while the gc and the first batch run, then resumed; the reference runs here."""
    sys.path.insert(0, str(ROOT / "tests" / "run"))
    import synthetic_job

    synthetic = [sys.executable, str(ROOT / "tests/run/synthetic_job.py"), "--batch_size", "4",
                 "--output_path", "out", "--log_samples"]
    env = {**os.environ, "JAXEVAL_PROGRESS": "0"}
    (tmp_path / "killed").mkdir()
    job = subprocess.Popen(synthetic, cwd=tmp_path / "killed", env=env, stderr=subprocess.PIPE, text=True)
    assert _until(lambda: bool(_out(tmp_path / "killed", "*.journal.jsonl")), job)
    job.send_signal(signal.SIGTERM)
    _, err = job.communicate(timeout=60)
    assert job.returncode == 143 and "Traceback" not in err, err
    assert len(_journal_entries(tmp_path / "killed")) < 48  # stopped before the end, what it did flushed
    done = subprocess.run(synthetic, cwd=tmp_path / "killed", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (tmp_path / "reference").mkdir()
    monkeypatch.chdir(tmp_path / "reference")  # the same relative output path as the killed run's
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setattr(synthetic_job, "SECONDS_PER_SAMPLE", 0.0)
    synthetic_job.install(monkeypatch.setattr)
    assert main(["run", "--model", "synthetic-model", "--tasks", "synthetic", *synthetic[2:]]) == 0
    from jaxeval.run.schema import VOLATILE_FIELDS

    volatile = (*VOLATILE_FIELDS, "git_hash")  # date, timing, plan (its measured side): they differ by design
    killed, reference = (json.loads(_out(tmp_path / name, "*.json")[0].read_text()) for name in ("killed", "reference"))
    assert {k: v for k, v in killed.items() if k not in volatile} == \
        {k: v for k, v in reference.items() if k not in volatile}
    assert not _out(tmp_path / "killed", ".*.tmp")
