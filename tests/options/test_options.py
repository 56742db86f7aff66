"""ModelOptions and RunOptions: declared once, the flags of every command that loads a model, the
keys of a run config YAML and the recorded, hashed config; load_model's defaults are theirs; and no
module below the command line takes an argparse Namespace."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from jaxeval.cli import build_parser
from jaxeval.errors import ConfigError
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import ATTENTION, DTYPES, KV_CACHE, QUANTIZE, ModelOptions
from jaxeval.options.run import RunOptions
from jaxeval.options.settings import names_of
from jaxeval.run_flags import run_flags, run_flags_of

PACKAGE = Path(__file__).resolve().parents[2] / "jaxeval"
LOAD_MODEL_NAMES = {"model_config": "config"}  # a field whose load_model argument is named otherwise


def _subparser(name: str):
    import argparse

    parser = build_parser()
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]


def test_load_model_defaults_are_the_command_lines():
    from jaxeval.api import load_model

    signature = inspect.signature(load_model).parameters
    for field in dataclasses.fields(ModelOptions):
        if field.name in ("model", "config_overrides"):  # the path, and **config_overrides
            continue
        parameter = signature[LOAD_MODEL_NAMES.get(field.name, field.name)] if not field.name.startswith("kv_") \
            or field.name == "kv_cache" else None
        if parameter is not None:
            assert parameter.default == field.default, field.name
    run = {a.dest: a.default for a in _subparser("run")._actions}
    for name in ("dtype", "attention", "prefill_chunk", "quantize", "quant_group", "dequantize", "kv_cache", "mesh"):
        assert run[name] == signature[name].default, name
    assert signature["dtype"].default == "auto"  # float32 on CPU, bfloat16 on accelerators, as the CLI


def test_the_choices_written_out_are_the_registries():
    from jaxeval.models.attention import BACKENDS
    from jaxeval.models.kv_policy import FLAGS, KINDS
    from jaxeval.models.quant import DEFAULT_GROUP, KINDS as QUANT_KINDS
    from jaxeval.weights.loader import DTYPES as LOADER_DTYPES

    assert sorted(ATTENTION) == sorted(BACKENDS)  # in the order --help lists them
    assert QUANTIZE == ("none", *QUANT_KINDS)
    assert KV_CACHE == KINDS
    assert DTYPES == ("auto", *LOADER_DTYPES)
    assert ModelOptions.quant_group == DEFAULT_GROUP
    assert {name for name in names_of(ModelOptions) if name.startswith("kv_")} == {"kv_cache", *(f"kv_{n}" for n in FLAGS)}


def test_every_model_command_declares_the_model_flags_once():
    model_flags = names_of(ModelOptions) - {"config_overrides"}
    for command in ("run", "validate", "plan", "curve", "serve", "agent-bench"):
        actions = {a.dest: a for a in _subparser(command)._actions}
        assert model_flags <= set(actions), (command, sorted(model_flags - set(actions)))
        assert actions["attention"].choices == ATTENTION and actions["dtype"].choices == DTYPES, command
        assert actions["prefill_chunk"].default == 2048 and actions["quantize"].choices == QUANTIZE, command
    bench = {a.dest: a for a in _subparser("bench")._actions}
    assert bench["attention"].choices == ATTENTION and bench["model"].default == "llama-57m"
    assert bench["dtype"].help.startswith("auto: the folder's torch_dtype")  # its own meaning of auto


def test_run_options_are_the_run_flags_with_the_same_defaults():
    actions = {a.dest: a for a in _subparser("run")._actions}
    for field in dataclasses.fields(RunOptions):
        assert actions[field.name].default == field.default, field.name
    assert "--journal" in actions["journal_mode"].option_strings  # the flag keeps its lm-eval-era name


def test_a_parsed_command_line_becomes_typed_flags():
    args = build_parser().parse_args(["run", "--tasks", "agent_bench, helmet", "--limit", "0.5", "--batch_size",
                                      "auto:4", "--model_args", "dtype=float32,kv_cache=streaming,kv_window=64,"
                                      "rope_theta=20000", "--dequantize", "true", "--judge_retries", "5"])
    flags = run_flags(args)
    assert isinstance(flags.model, ModelOptions) and isinstance(flags.run, RunOptions)
    assert (flags.model.dtype, flags.model.kv_cache, flags.model.kv_window, flags.model.dequantize) == \
        ("float32", "streaming", 64, True)
    assert flags.model.config_overrides == {"rope_theta": 20000.0}
    assert (flags.run.limit, flags.run.batch_size, flags.run.task_list()) == (0.5, "auto:4", ["agent_bench", "helmet"])
    assert flags.flag("judge_retries") == 5 and "func" not in flags.extra and "parser" not in flags.extra
    with pytest.raises(dataclasses.FrozenInstanceError):
        flags.model.dtype = "bfloat16"
    with pytest.raises(ConfigError, match="--model_args: kv_window=x is not valid"):
        run_flags(build_parser().parse_args(["run", "--model_args", "kv_window=x"]))
    with pytest.raises(ConfigError, match="--model_args: attention=flash is not one of chunked"):
        run_flags(build_parser().parse_args(["run", "--model_args", "attention=flash"]))


def test_the_recorded_config_holds_every_flag_a_namespace_held():
    """What a run records (and hashes) is every flag by its dest, as when the Namespace was recorded:
    a journal of an earlier version resumes."""
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.run.config import NOT_HASHED, recorded_config

    args = build_parser().parse_args(["run", "--limit", "1"])
    flags = run_flags(args)
    every = {key for key in vars(args) if key not in ("func", "parser")} | {"config_overrides"}
    assert set(flags.values()) == every
    config = recorded_config(flags, ["agent_bench"], run_tasks())
    assert config["limit"] == 1 and config["config_overrides"] == {} and config["tasks"] == ["agent_bench"]
    # the keys the hash leaves out, as they were written out by hand before the options were typed
    assert NOT_HASHED == frozenset({
        "model", "quantize", "quant_group", "dequantize", "kv_cache", "kv_sinks", "kv_window", "kv_budget",
        "kv_observe", "kv_kernel", "kv_pool", "batch_size", "output_path", "out", "log_samples",
        "log_samples_prompts", "batch_size_auto", "config", "host_split", "func", "command", "journal",
        "journal_mode", "model_args", "judge_timeout", "judge_retries", "judge_max_failures", "accelerator", "mfu",
        "mbu", "calibrate", "judge_price", "plan_json", "steps", "watch", "watch_poll", "watch_max_wait",
        "tensorboard", "mapping",
        "target", "target_choice"})  # jaxeval run --target (issue 25): how the batch and mesh were chosen


def test_evaluate_reads_its_settings_as_the_flags_without_the_cli():
    flags = run_flags_of({"tasks": "agent_bench", "model": "live", "limit": 2, "dtype": "float32",
                          "agent_bench_sets": "facts", "log_samples": True})
    assert flags.model == ModelOptions(model="live", dtype="float32")
    assert (flags.run.limit, flags.run.log_samples, flags.flag("agent_bench_sets")) == (2, True, "facts")
    assert flags.flag("judge_timeout") == 60.0  # every other flag at its default
    with pytest.raises(ConfigError, match="evaluate: these settings are not valid"):
        run_flags_of({"attention": "flash"})


def test_a_yaml_config_fills_the_typed_options(tmp_path):
    from jaxeval.cli import _apply_config_file

    config = tmp_path / "run.yaml"
    config.write_text("tasks: [agent_bench]\nlimit: 2\ndtype: float32\nmodel_args: {rope_theta: 20000}\n"
                      "journal_mode: recover\n", encoding="utf-8")
    argv = ["run", "--config", str(config), "--limit", "3"]
    parser = build_parser()
    _apply_config_file(parser, argv)
    flags = run_flags(parser.parse_args(argv))
    assert (flags.run.limit, flags.model.dtype, flags.run.journal_mode) == (3, "float32", "recover")  # flags win
    assert flags.model.config_overrides == {"rope_theta": 20000.0}


def test_serve_takes_every_model_flag(monkeypatch):
    import jaxeval.api
    from jaxeval.serve import cli as serve_cli

    args = build_parser().parse_args(["serve", "some/model", "--quantize", "int8", "--kv_cache", "int8",
                                      "--mesh", "auto", "--port", "0"])
    seen = {}

    def fake_load(path, **kwargs):
        seen.update(kwargs, path=path)
        raise ConfigError("stop here")

    monkeypatch.setattr(jaxeval.api, "load_model", fake_load)
    with pytest.raises(ConfigError, match="stop here"):
        serve_cli.cmd_serve(args)
    assert (seen["path"], seen["quantize"], seen["mesh"], seen["kv_cache"].kind) == ("some/model", "int8", "auto", "int8")


# The command line layer: the modules that parse flags into the typed options. Everything else takes
# ModelOptions / RunOptions / RunFlags (or a benchmark's Settings), never a Namespace.
CLI_MODULES = ("cli.py", "run_flags.py")
CLI_NAMES = ("cli.py", "command.py", "__main__.py")  # a sub-command's thin module (serve/cli.py, plan/command.py)


def _is_cli(relative: Path) -> bool:
    return str(relative) in CLI_MODULES or relative.name in CLI_NAMES or relative.parts[0] == "options"


def namespace_uses(tree: ast.AST) -> list[str]:
    """Where a module names argparse's Namespace, reads a namespace's vars(args), or defines a function
    taking a parameter called args (the Namespace's name everywhere in jaxeval)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "Namespace":
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and any(alias.name == "Namespace" for alias in node.names):
            found.append(f"line {node.lineno}: from {node.module} import Namespace")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
                if arg.arg == "args":
                    found.append(f"line {node.lineno}: {node.name}(args)")
    return found


# Functions whose parameter named args is no command line: tuples of arrays (lax.map bodies) and a
# RULER task's own argument dict. (A benchmark's rescore hook takes its typed ScoreOptions.)
NOT_A_COMMAND_LINE = {("engine/compare.py", "block"), ("engine/read.py", "block"),
                      ("benchmarks/ruler/niah.py", "__init__"), ("benchmarks/ruler/qa.py", "__init__"),
                      ("benchmarks/ruler/variable_tracking.py", "__init__"),
                      ("benchmarks/ruler/word_counts.py", "__init__")}


def test_no_module_below_the_command_line_takes_a_namespace():
    offenders = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if _is_cli(relative):
            continue
        uses = [use for use in namespace_uses(ast.parse(path.read_text(encoding="utf-8")))
                if not any(f"{name}(args)" in use for file, name in NOT_A_COMMAND_LINE if file == str(relative))]
        if uses:
            offenders[str(relative)] = uses
    assert offenders == {}


def test_the_namespace_check_can_fail():
    source = "import argparse\ndef run(args: argparse.Namespace):\n    return vars(args)\n"
    assert sorted(namespace_uses(ast.parse(source))) == ["line 2: argparse.Namespace", "line 2: run(args)"]
    assert namespace_uses(ast.parse("from argparse import Namespace\n")) == ["line 1: from argparse import Namespace"]
    assert namespace_uses(ast.parse("def f(flags: RunFlags):\n    return flags.run\n")) == []


def test_run_flags_values_round_trip():
    flags = RunFlags(ModelOptions(model="m", kv_cache="int8"), RunOptions(limit=3), {"helmet_seed": 7})
    assert RunFlags.of(flags.values()) == flags
    assert flags.with_run(batch_size=2).run.batch_size == 2 and flags.run.batch_size == 8


def test_the_score_commands_take_typed_options():
    from jaxeval.benchmarks.registry import scorers

    for name, benchmark in scorers().items():
        assert dataclasses.is_dataclass(benchmark.ScoreOptions), name
        parser = __import__("argparse").ArgumentParser()
        benchmark.add_score_arguments(parser)
        options = benchmark.score_options(parser.parse_args(["--predictions", "p"]))
        assert isinstance(options, benchmark.ScoreOptions) and options.predictions == "p", name
        with pytest.raises(SystemExit):  # --predictions is required
            parser.parse_args([])


def test_config_hashes_are_those_of_the_namespace_era():
    """Computed by jaxeval at 2ffffe8 (the flags parsed into a Namespace and recorded from it) for the same
    command lines: the typed options record and hash the same values, so those runs' journals resume."""
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.run.config import config_hash, not_hashed_keys

    def run_hash(*argv: str) -> str:
        from jaxeval.run.config import recorded_config

        flags = run_flags(build_parser().parse_args(["run", "--agent_bench_data", "/d", *argv]))
        tasks = flags.run.task_list()
        return config_hash(recorded_config(flags, tasks, run_tasks()), not_hashed_keys(flags, tasks, run_tasks()))

    assert run_hash() == "20e616225a9f0af5"
    assert run_hash("--limit", "2", "--seed", "3") == "24a18025a647805e"
    assert run_hash("--model_args", "dtype=float32,rope_theta=20000,max_position_embeddings=4096",
                    "--kv_cache", "int8") == "66414c13b5745ae4"
    assert run_hash("--gen_kwargs", 'max_gen_toks=5,until=["END"]', "--tasks", "agent_bench,helmet",
                    "--helmet_seed", "7") == "bd2d70e8c9dbb17a"
    assert run_hash("--attention", "xla", "--prefill_chunk", "512", "--mesh", "auto",
                    "--batch_size", "auto:4") == "d5d239381599e358"
