"""The input and output boundary (jaxeval/io/): files a user gives that cannot be read,
are not UTF-8 or hold nothing, destinations that cannot be written or must not be overwritten,
and flags the run would reject: each one line and exit status 2, in `validate` as in `run`."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jaxeval.cli import EMBEDDED_MODEL, main

LONGBENCH_PRED = Path(__file__).resolve().parents[1] / "benchmarks/longbench/data/official_eval/pred"
AGENT_DATA = Path(__file__).resolve().parents[2] / "jaxeval/assets/agent_bench_sample"
LONGBENCH_SAMPLE = Path(__file__).resolve().parents[2] / "jaxeval/assets/longbench_sample"


def one_line_error(capsys, *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("jaxeval: error: ") and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


def test_non_utf8_predictions_name_the_file_and_line(tmp_path, capsys):
    pred = tmp_path / "pred"
    shutil.copytree(LONGBENCH_PRED, pred)
    victim = sorted(pred.glob("*.jsonl"))[0]
    lines = victim.read_bytes().splitlines(keepends=True)
    victim.write_bytes(lines[0] + b'{"pred": "\xff\xfe"}\n' + b"".join(lines[1:]))
    assert main(["score", "--benchmark", "longbench", "--predictions", str(pred), "--output_path",
                 str(tmp_path / "out")]) == 2
    one_line_error(capsys, f"{victim}, line 2: not UTF-8 text (byte 0xff")


def test_non_utf8_model_config_names_the_file(tmp_path, capsys):
    model = tmp_path / "m"
    shutil.copytree(EMBEDDED_MODEL, model)
    (model / "config.json").write_bytes(b'{"model_type": "ll\xe9ma"}')
    for command in (["validate", "--model", str(model)], ["run", "--model", str(model), "--output_path", str(tmp_path)]):
        assert main(command) == 2
        one_line_error(capsys, f"{model / 'config.json'}: not UTF-8 text")


def test_unwritable_destinations_are_one_line(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    assert main(["run", "--output_path", str(blocker / "results")]) == 2
    one_line_error(capsys, str(blocker), "is a file, not a folder")
    assert main(["validate", "--out", str(tmp_path)]) == 2  # a folder where the results file should go
    one_line_error(capsys, "is a folder, expected a file path")
    assert main(["report", str(blocker), "--out", str(blocker)]) == 2
    one_line_error(capsys, f"--out {blocker}: exists and is not a folder")
    assert main(["convert", str(EMBEDDED_MODEL), str(blocker)]) == 2
    one_line_error(capsys, "already exists; remove it or choose another path")
    assert main(["score", "--benchmark", "longbench", "--predictions", str(LONGBENCH_PRED),
                 "--output_path", str(blocker / "x")]) == 2
    one_line_error(capsys, str(blocker))


def test_score_writes_a_new_folder_and_never_touches_the_predictions(tmp_path, capsys):
    pred = tmp_path / "pred"
    shutil.copytree(LONGBENCH_PRED, pred)

    def digest():
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(pred.iterdir())}
    before = digest()
    assert main(["score", "--benchmark", "longbench", "--predictions", str(pred)]) == 0
    assert digest() == before
    assert (tmp_path / "pred_rescored" / "result.json").is_file()
    assert f"wrote result_json: {tmp_path / 'pred_rescored'}" in capsys.readouterr().out


def _empty_agent_data(tmp_path) -> Path:
    data = tmp_path / "agent"
    shutil.copytree(AGENT_DATA, data)
    table = pq.read_table(data / "facts" / "8k-00000-of-00001.parquet")
    pq.write_table(pa.Table.from_pylist([], schema=table.schema), data / "facts" / "8k-00000-of-00001.parquet")
    return data


def test_empty_data_is_an_error_in_validate_and_run(tmp_path, capsys):
    data = _empty_agent_data(tmp_path)
    flags = ["--agent_bench_data", str(data), "--agent_bench_sets", "facts", "--output_path", str(tmp_path / "out")]
    assert main(["validate", *flags]) == 2
    one_line_error(capsys, "config 'facts', split '8k' holds no items")
    assert main(["run", *flags]) == 2
    one_line_error(capsys, "holds no items")
    longbench = tmp_path / "lb"
    shutil.copytree(LONGBENCH_SAMPLE, longbench)
    (longbench / "qasper.jsonl").write_text("\n")
    assert main(["validate", "--tasks", "longbench", "--longbench_data", str(longbench)]) == 2
    one_line_error(capsys, f"{longbench}: LongBench config 'qasper' holds no records")
    helmet = tmp_path / "narrativeqa_out.json"
    helmet.write_text(json.dumps({"args": {"datasets": "narrativeqa_7892", "input_max_length": 8192}, "data": []}))
    assert main(["score", "--benchmark", "helmet", "--predictions", str(helmet)]) == 2
    one_line_error(capsys, "field 'data' is empty")


@pytest.mark.parametrize("flags, message", [
    (["--tasks", "longbench_pro", "--longbench_pro_truncation_length", "-5"], "at least 2 tokens, got -5"),
    (["--tasks", "longbench_pro", "--longbench_pro_runs", "0"], "--longbench_pro_runs must be a positive"),
    (["--tasks", "longbench_pro", "--longbench_pro_top_p", "1.5"], "--longbench_pro_top_p must be in (0, 1]"),
    (["--tasks", "helmet", "--helmet_lengths", "9k"], "unknown HELMET length '9k'"),
    (["--tasks", "helmet", "--helmet_judge", "http:nope"], "expected http:BASE_URL:MODEL"),
    (["--tasks", "helmet", "--helmet_judge_max_tokens", "0"], "--helmet_judge_max_tokens must be >= 1"),
    (["--tasks", "helmet", "--judge_max_failures", "2"], "--judge_max_failures is a fraction"),
])
def test_validate_rejects_every_flag_the_run_rejects(tmp_path, capsys, flags, message):
    for command in ("validate", "run"):
        assert main([command, *flags, "--output_path", str(tmp_path)]) == 2
        one_line_error(capsys, message)
    assert not list(tmp_path.iterdir())  # refused before anything was loaded or written


def test_outputs_never_overwrite_a_journal_or_the_reference(tmp_path, capsys):
    journal = tmp_path / "run.journal.jsonl"
    journal.write_text('{"identity": {}, "jaxeval_journal": 1}\n')
    renamed = tmp_path / "copy.jsonl"  # a journal under another name is known by its header line
    renamed.write_bytes(journal.read_bytes())
    for target in (journal, renamed):
        before = target.read_bytes()
        assert main(["validate", "--out", str(target)]) == 2
        one_line_error(capsys, f"--out {target}: is a run's journal")
        assert target.read_bytes() == before
    reference = tmp_path / "reference.json"
    reference.write_text("{}")
    assert main(["validate", "--out", str(reference), "--reference", str(reference)]) == 2
    one_line_error(capsys, f"--out {reference}: is the input file {reference}")
    assert reference.read_text() == "{}"


def test_a_write_that_fails_names_the_file(tmp_path, monkeypatch):
    import os as os_module

    from jaxeval.errors import ConfigError
    from jaxeval.io.fs import write_text_atomic

    def full(fd):
        raise OSError(27, "File too large")
    monkeypatch.setattr(os_module, "fsync", full)
    target = tmp_path / "results.json"
    with pytest.raises(ConfigError, match=f"{target}: cannot be written \\(File too large\\)"):
        write_text_atomic(target, "{}")
    assert not list(tmp_path.iterdir())  # no temp file left behind


def test_report_never_follows_run_name_out_of_its_folder(tmp_path, capsys):
    from jaxeval.errors import DataError
    from jaxeval.report.compare import samples_path
    from jaxeval.report.data import Run

    run = Run("r", str(tmp_path / "r.json"), {}, {}, {"run_name": "../../etc/passwd"})
    with pytest.raises(DataError, match="run_name '../../etc/passwd' is not a plain file name"):
        samples_path(run, "longbench")
    fine = Run("r", str(tmp_path / "r.json"), {}, {}, {"run_name": "tiny-longbench-1"})
    assert samples_path(fine, "longbench") == str(tmp_path / "tiny-longbench-1.samples_longbench.jsonl")
