"""Bad inputs of the newer surfaces (issue 28), each through the real CLI entry in this process:
exit status 2 and one line on stderr naming the flag or file, never a traceback, never a silent 0.
`validate` runs every flag case, so it checks what `run` would (tests/io/test_inputs.py has the
older set: unreadable files, empty data, unwritable destinations)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from jaxeval.cli import EMBEDDED_MODEL, main

MULTIHOST_ENV = ("JAXEVAL_COORDINATOR", "JAXEVAL_NUM_PROCESSES", "JAXEVAL_PROCESS_ID", "JAXEVAL_DISTRIBUTED")


def one_line(capsys, code: int, *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("jaxeval: error: ") and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


def call(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's own refusals
        return stop.code


# (flags for `validate`, text the one line must hold)
FLAG_CASES = [
    (["--model_args", 'rope_scaling={"rope_type":"linear","factor":"x"}'], "'rope_scaling.factor'='x' must be a number"),
    (["--model_args", 'rope_scaling={"rope_type":"linear","factor":-2}'], "'rope_scaling.factor'=-2.0 must be positive"),
    (["--model_args", 'rope_scaling={"rope_type":"linear","factor":0}'], "must be positive"),
    (["--model_args", 'rope_scaling={"rope_type":"bogus","factor":2}'], "rope_type='bogus'"),
    (["--model_args", "rope_scaling=5"], "'rope_scaling' must be an object"),
    (["--model_args", "rope_theta=-1"], "'rope_theta'=-1.0 must be positive"),
    (["--model_args", "sliding_window=-5"], "--model_args: sliding_window=-5 must be a positive integer"),
    (["--model_args", "sliding_window=abc"], "--model_args: sliding_window=abc is not a JSON value"),
    (["--model_args", "sliding_window=true"], "--model_args: sliding_window=True must be a positive integer"),
    (["--model_args", "max_position_embeddings=0"], "max_position_embeddings=0 must be a positive integer"),
    (["--model_args", "rope_scaling=" + "[" * 50000], "--model_args"),
    (["--quant_group", "0"], "--quant_group must be a positive integer"),
    (["--quant_group", "-3"], "--quant_group must be a positive integer"),
    (["--quantize", "int4", "--quant_group", "7"], "--quant_group"),
    (["--quantize", "int4", "--quant_group", "48"], "--quant_group 48: does not divide"),
    (["--seed", "-1"], "--seed must be an integer from 0"),
    (["--seed", str(2**40)], "--seed must be an integer from 0"),
    (["--mesh", "data=64"], "needs 64 devices"),
    (["--mesh", "foo=2"], "mesh 'foo=2'"),
    (["--mesh", "data=0"], "mesh 'data=0'"),
    (["--kv_cache", "snapkv", "--tasks", "agent_bench"], "teacher-forced reads (task agent_bench"),
    (["--kv_sinks", "4"], "--kv_sinks applies to --kv_cache streaming"),
    (["--kv_cache", "streaming", "--kv_window", "0"], "window must be an integer >= 1"),
    (["--kv_cache", "snapkv", "--kv_kernel", "4", "--tasks", "longbench"], "kernel=4 must be odd"),
    (["--tasks", "longbench", "--gen_kwargs", "temperature=inf"], "--gen_kwargs: temperature="),
    (["--tasks", "longbench", "--gen_kwargs", "top_p=nan"], "--gen_kwargs: top_p="),
    (["--tasks", "longbench", "--gen_kwargs", '{"temperature": Infinity}'], "--gen_kwargs: temperature=inf"),
    (["--tasks", "longbench", "--gen_kwargs", "max_gen_toks=100000000"], "--gen_kwargs: max_gen_toks=100000000 leaves no room"),
    (["--tasks", "longbench", "--gen_kwargs", "max_gen_toks=32768"], "leaves no room for a prompt"),
    (["--tasks", "longbench", "--gen_kwargs", "{" * 50000], "--gen_kwargs"),
    (["--tasks", "longbench", "--gen_kwargs", "[1, 2]"], "--gen_kwargs"),
]


@pytest.mark.parametrize("flags, message", FLAG_CASES, ids=[" ".join(f)[:60] for f, _ in FLAG_CASES])
def test_flags_validate_refuses(tmp_path, capsys, flags, message):
    one_line(capsys, call(["validate", *flags, "--output_path", str(tmp_path / "out")]), message)


@pytest.mark.parametrize("flags, message", [
    (["--model_args", 'rope_scaling={"rope_type":"linear","factor":-2}'], "must be positive"),
    (["--quantize", "int4", "--quant_group", "48"], "does not divide"),
    (["--seed", "-1"], "--seed"),
    (["--tasks", "longbench", "--gen_kwargs", "max_gen_toks=40000"], "leaves no room"),
])
def test_run_refuses_them_before_loading_anything(tmp_path, capsys, flags, message):
    one_line(capsys, call(["run", *flags, "--output_path", str(tmp_path / "out")]), message)
    assert not list((tmp_path / "out").glob("*.journal.jsonl"))


def test_plan_refuses_them_too_but_not_a_mesh_for_other_hardware(tmp_path, capsys):
    one_line(capsys, call(["plan", "--seed", "-1"]), "--seed")
    one_line(capsys, call(["plan", "--quant_group", "0"]), "--quant_group")


BOMB = "".join(f"{n}: &{n} [{', '.join(['*' + p] * 9 if p else ['x'] * 9)}]\n"
               for p, n in zip(["", "a", "b", "c", "d"], ["a", "b", "c", "d", "e"])) + "tasks: *e\n"

YAML_CASES = [
    ("limit: abc\n", "limit: expected an integer or a fraction"),
    ("batch_size: {a: 1}\n", "batch_size: expected a single value, got a mapping"),
    ("seed: abc\n", "seed: 'abc' is not a valid int"),
    ("seed: -4\n", "--seed must be an integer from 0"),
    ("tasks: 5\n", "tasks: expected text, got int 5"),
    ("output_path: 5\n", "output_path: expected text"),
    ("mesh: [1, [2]]\n", "mesh: expected a list of plain values"),
    ("log_samples: maybe\n", "log_samples: expected true or false"),
    ("gen_kwargs: {temperature: .inf}\n", "--gen_kwargs: temperature=inf"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("tasks: " + "[" * 12 + "x" + "]" * 12 + "\n", "nested deeper than"),
    (BOMB, "more than 10000 values once its aliases are expanded"),
    ("tasks: [agent_bench\n", "not valid YAML"),
]


@pytest.mark.parametrize("text, message", YAML_CASES, ids=[t[:30] for t, _ in YAML_CASES])
def test_yaml_configs_are_checked(tmp_path, capsys, text, message):
    config = tmp_path / "run.yaml"
    config.write_text(text)
    one_line(capsys, call(["validate", "--config", str(config), "--output_path", str(tmp_path / "out")]), message)


def test_a_fifo_is_never_opened_as_a_config_nor_written_as_an_output(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    one_line(capsys, call(["validate", "--config", str(fifo)]), str(fifo), "not a regular file")
    one_line(capsys, call(["validate", "--out", str(fifo)]), f"--out {fifo}", "not a regular file")
    one_line(capsys, call(["run", "--output_path", str(fifo)]), f"--output_path {fifo}")
    one_line(capsys, call(["report", str(tmp_path), "--out", str(fifo)]), f"--out {fifo}")


def _model(tmp_path: Path, **files) -> str:
    folder = tmp_path / "model"
    shutil.copytree(EMBEDDED_MODEL, folder)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text)
    return str(folder)


def _template(template) -> str:
    config = json.loads((EMBEDDED_MODEL / "tokenizer_config.json").read_text())
    return json.dumps(dict(config, chat_template=template))


MODEL_CASES = [
    ({"generation_config__json": "[1, 2]"}, "generation_config.json: expected a JSON object, got list"),
    ({"generation_config__json": '{"eos_token_id": "x"}'}, "generation_config.json: eos_token_id must be"),
    ({"config__json": "[1, 2]"}, "config.json: expected a JSON object"),
    ({"config__json": "[" * 100000 + "]" * 100000}, "config.json: JSON nested too deeply"),
    ({"tokenizer_config__json": _template("{{ raise_exception('no system role') }}")}, "chat template"),
    ({"tokenizer_config__json": _template("{% if %}")}, "TemplateSyntaxError"),
    ({"tokenizer_config__json": _template(5)}, "chat template"),
]


@pytest.mark.parametrize("files, message", MODEL_CASES, ids=[m[:40] for _, m in MODEL_CASES])
def test_model_folder_files(tmp_path, capsys, files, message):
    model = _model(tmp_path, **files)
    one_line(capsys, call(["validate", "--model", model, "--tasks", "longbench", "--output_path",
                           str(tmp_path / "out")]), message)


@pytest.mark.parametrize("data, message", [
    (b"NOPE" + bytes(100), "GGUF magic invalid"),
    (b"GGUF\x03\x00\x00\x00\x05", "not a readable GGUF file"),
    (b"", "not a readable GGUF file"),
])
def test_gguf_files(tmp_path, capsys, data, message):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(data)
    one_line(capsys, call(["validate", "--model", str(gguf), "--output_path", str(tmp_path / "out")]), str(gguf), message)


@pytest.mark.parametrize("env, message", [
    ({"JAXEVAL_NUM_PROCESSES": "2", "JAXEVAL_PROCESS_ID": "5", "JAXEVAL_COORDINATOR": "h:1"}, "JAXEVAL_PROCESS_ID=5"),
    ({"JAXEVAL_NUM_PROCESSES": "1", "JAXEVAL_PROCESS_ID": "3", "JAXEVAL_COORDINATOR": "h:1"}, "JAXEVAL_PROCESS_ID=3"),
    ({"JAXEVAL_NUM_PROCESSES": "0", "JAXEVAL_PROCESS_ID": "0", "JAXEVAL_COORDINATOR": "h:1"}, "JAXEVAL_NUM_PROCESSES=0"),
    ({"JAXEVAL_NUM_PROCESSES": "2", "JAXEVAL_PROCESS_ID": "0"}, "need JAXEVAL_COORDINATOR"),
    ({"JAXEVAL_COORDINATOR": "h:1"}, "JAXEVAL_COORDINATOR needs"),
    ({"JAXEVAL_NUM_PROCESSES": "abc", "JAXEVAL_PROCESS_ID": "0", "JAXEVAL_COORDINATOR": "h:1"}, "'abc' must be an integer"),
    ({"JAXEVAL_DISTRIBUTED": "1", "JAXEVAL_COORDINATOR": "h:1"}, "contradicts"),
    ({"JAXEVAL_DISTRIBUTED": "maybe"}, "JAXEVAL_DISTRIBUTED='maybe'"),
    ({"JAXEVAL_NUM_PROCESSES": "2", "JAXEVAL_PROCESS_ID": "0", "JAXEVAL_COORDINATOR": "nohost"}, "host:port"),
])
def test_multihost_environment(tmp_path, capsys, monkeypatch, env, message):
    for name in MULTIHOST_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for command in ("validate", "run"):
        one_line(capsys, call([command, "--output_path", str(tmp_path / "out")]), message)


def _results(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize("data, message", [
    ("[" * 100000 + "]" * 100000, "JSON nested too deeply"),
    ({"schema_version": 9, "results": {"a": {}}}, "results schema_version 9"),
    ({"schema_version": 1}, "without results"),
    ({"schema_version": 1, "results": {}}, "without results"),
])
def test_results_files_for_report(tmp_path, capsys, data, message):
    path = _results(tmp_path, "r.json", data)
    one_line(capsys, call(["report", str(path), "--out", str(tmp_path / "page")]), str(path), message)


def test_deeply_nested_predictions(tmp_path, capsys):
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "qasper.jsonl").write_text("[" * 100000 + "]" * 100000 + "\n")
    one_line(capsys, call(["score", "--benchmark", "longbench", "--predictions", str(pred), "--output_path",
                           str(tmp_path / "s")]), "qasper.jsonl, line 1: JSON nested too deeply")
    helmet = _results(tmp_path, "helmet.json", "[" * 100000 + "]" * 100000)
    one_line(capsys, call(["score", "--benchmark", "helmet", "--predictions", str(helmet)]), str(helmet))


def test_lm_eval_adapter_model_args():
    pytest.importorskip("lm_eval")
    from jaxeval.errors import ConfigError
    from jaxeval.lm_eval.model import JaxevalLM

    for args, message in [({"prefill_chunk": "abc"}, "prefill_chunk='abc'"), ({"seed": "-1"}, "seed='-1'"),
                          ({"max_length": "0"}, "max_length='0'"), ({"batch_size": "0"}, "batch_size='0'"),
                          ({"host_split": "sideways"}, "host_split"), ({"top_k": 3}, "unknown top_k")]:
        with pytest.raises(ConfigError, match=message) as raised:
            JaxevalLM(pretrained=str(EMBEDDED_MODEL), **args)
        assert isinstance(raised.value, ValueError)  # what lm-eval's callers expect of a constructor
