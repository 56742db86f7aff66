"""`jaxeval run --model RUN/checkpoints --steps ...`: a score per committed training step, a step still being
written never read, a rerun that skips finished steps, --watch stopping cleanly, TensorBoard scalars."""

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxeval.cli import EMBEDDED_MODEL, main
from jaxeval.weights.orbax import save_checkpoint
from jaxeval.weights.steps import committed_steps, parse_steps, select_steps, step_model
from tests.training_loop import LEAF, TINY, training

FLAGS = ["--tasks", "agent_bench", "--limit", "1", "--agent_bench_sets", "facts"]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """RUN/checkpoints with steps 0, 20, 40 committed (jaxeval's layout per step), step 60 still being
    written by rename (60.orbax-checkpoint-tmp-...) and step 80 with an item still uncommitted."""
    run = tmp_path_factory.mktemp("run") / "checkpoints"
    for step, model in training(80, 20):
        target = run / (f"{step}.orbax-checkpoint-tmp-1733461234" if step == 60 else str(step))
        save_checkpoint(target, model.params(), TINY, "float32", tokenizer_from=EMBEDDED_MODEL)
    (run / "80" / "params").rename(run / "80" / "params.orbax-checkpoint-tmp-1733461299")
    return run


def _events(folder: Path) -> dict[str, dict[int, float]]:
    """tag -> {step: value} from the TFRecord event files tensorboardX wrote."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, dict[int, float]] = {}
    for path in folder.glob("events.out.tfevents.*"):
        data = path.read_bytes()
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            event = event_pb2.Event.FromString(data[offset + 12:offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    return scalars


def test_steps_selection_and_commit_rules(run_folder, tmp_path):
    assert list(committed_steps(run_folder)) == [0, 20, 40]  # 60 and 80 are still being written
    assert select_steps([0, 20, 40], *parse_steps("every:40")) == [0, 40]
    assert select_steps([0, 20, 40], *parse_steps("latest")) == [40]
    assert select_steps([0, 20, 40], *parse_steps("40,0,7")) == [0, 40]
    gcs_style = tmp_path / "ckpt"
    for step in (1, 2):
        (gcs_style / str(step)).mkdir(parents=True)
    (gcs_style / "1" / "commit_success.txt").write_text("ok")
    assert list(committed_steps(gcs_style)) == [1]  # commit files in use: step 2 has none yet
    (gcs_style / "1" / "items").mkdir()  # an Orbax CheckpointManager step (MaxText): --model reads its item
    assert step_model(gcs_style / "1") == gcs_style / "1" / "items"
    assert step_model(run_folder / "20") == run_folder / "20"  # a model folder of its own
    easydel_style = tmp_path / "trainer"
    for name in ("run-500", "run-1000", "run-1500.orbax-checkpoint-tmp-9", "logs"):
        (easydel_style / name).mkdir(parents=True)
    assert {s: f.name for s, f in committed_steps(easydel_style).items()} == {500: "run-500", 1000: "run-1000"}


def test_series_scores_every_committed_step_then_skips_them(run_folder, tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    out, board = tmp_path / "out", tmp_path / "tb"
    assert main(["run", "--model", str(run_folder), "--steps", "all", *FLAGS, "--output_path", str(out),
                 "--tensorboard", str(board)]) == 0
    err = capsys.readouterr().err
    assert [line.split(":")[0] for line in err.splitlines() if "evaluating" in line] == ["step 0", "step 20", "step 40"]
    assert "2 still being written: 60.orbax-checkpoint-tmp-1733461234, 80" in err
    (series_file,) = out.glob("*.series.json")
    series = json.loads(series_file.read_text())
    assert list(series["steps"]) == ["0", "20", "40"]
    scores = [series["steps"][s]["scores"][LEAF]["mean_logprob"] for s in ("0", "20", "40")]
    assert scores[0] < scores[1] < scores[2], scores  # the training shows in the series
    for step in ("0", "20", "40"):
        results = json.loads(Path(series["steps"][step]["results"]).read_text())
        assert results["results"][LEAF]["mean_logprob"] == series["steps"][step]["scores"][LEAF]["mean_logprob"]
        assert results["model"]["path"] == str(run_folder / step)
    report = out / series_file.name.replace(".json", "")
    assert (report / "scores_by_step.png").stat().st_size > 0 and (report / "agent_bench_length_by_step.png").is_file()
    tagged = _events(board)
    assert tagged[f"{LEAF}/mean_logprob"] == pytest.approx({0: scores[0], 20: scores[1], 40: scores[2]})
    # tensorboardX writes a tag's spaces as underscores
    assert set(tagged["headline/agent_bench/Facts_recalled_at_8k_tokens"]) == {0, 20, 40}

    # step 80's item is committed now: a rerun scores only it, the finished steps are skipped
    (run_folder / "80" / "params.orbax-checkpoint-tmp-1733461299").rename(run_folder / "80" / "params")
    try:
        assert main(["run", "--model", str(run_folder), "--steps", "latest", *FLAGS, "--output_path", str(out)]) == 0
        err = capsys.readouterr().err
        assert [line for line in err.splitlines() if "evaluating" in line] == [f"step 80: evaluating {run_folder / '80'}"]
        assert list(json.loads(series_file.read_text())["steps"]) == ["0", "20", "40", "80"]
        assert main(["run", "--model", str(run_folder), "--steps", "all", *FLAGS, "--output_path", str(out)]) == 0
        assert "evaluating" not in capsys.readouterr().err
    finally:
        (run_folder / "80" / "params").rename(run_folder / "80" / "params.orbax-checkpoint-tmp-1733461299")


def test_series_bad_input_is_one_line(run_folder, tmp_path, capsys):
    for argv, needle in ((["--steps", "every:0"], "every:N needs a positive integer"),
                         (["--steps", "5,x"], "expected all, latest, every:N"),
                         (["--steps", "7"], "step 7 is not a committed step"),
                         (["--steps", "all", "--watch_poll", "0"], "--watch_poll must be between")):
        assert main(["run", "--model", str(run_folder), *argv, *FLAGS, "--output_path", str(tmp_path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err, err
    empty = tmp_path / "empty"
    (empty / "5.orbax-checkpoint-tmp-1").mkdir(parents=True)
    assert main(["run", "--model", str(empty), "--steps", "all", *FLAGS, "--output_path", str(tmp_path)]) == 2
    assert "no committed checkpoint step (1 still being written" in capsys.readouterr().err


def test_watch_stops_on_sigterm_and_at_its_max_wait(tmp_path):
    run = tmp_path / "checkpoints"
    (run / "3.orbax-checkpoint-tmp-1").mkdir(parents=True)  # being written; never read
    argv = [sys.executable, "-m", "jaxeval.cli", "run", "--model", str(run), "--steps", "all", *FLAGS,
            "--output_path", str(tmp_path / "out"), "--watch", "--watch_poll", "0.2"]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    finished = subprocess.run(argv + ["--watch_max_wait", "1"], env=env, capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0 and "no new committed step in 1 s; stopping" in finished.stderr
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    lines = []
    while not any(line.startswith("watching ") for line in lines):  # past start-up: it is polling
        lines.append(proc.stderr.readline())
        assert lines[-1] or proc.poll() is None, "".join(lines)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    err = "".join(lines) + proc.communicate(timeout=60)[1]
    assert proc.returncode == 143
    assert "jaxeval: terminated (SIGTERM) while watching" in err.strip().splitlines()[-1]
