"""`jaxeval` command line: run, validate, ls, agent-bench, score, convert, serve.

Flag names follow lm-eval-harness (--model, --model_args, --tasks, --limit, --output_path); each
benchmark adds its own settings as --<benchmark>_<field> and may add a command (`agent-bench`,
with the longctx-agent-bench card's --data, --sets, --lengths, --mode, --out); see
jaxeval/benchmarks/base.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxeval.embedded import EMBEDDED_MODEL  # imported by tests and commands as jaxeval.cli.EMBEDDED_MODEL
from jaxeval.errors import JaxevalError, print_user_error
from jaxeval.options.flags import RunFlags
from jaxeval.options.model import ModelOptions, add_model_arguments
from jaxeval.run_flags import run_flags

RUN_CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # a checkout's configs/ (example.yaml, suites/)


_model_options = add_model_arguments  # handed to the benchmarks' own commands (`jaxeval agent-bench`)


def _load(options: ModelOptions | RunFlags):
    """The model of these options (a run's flags: its model options, and its --gen_kwargs' generation budget
    checked too), each flag checked against the model's config before a weight is read."""
    model, gen_kwargs = (options.model, options.run.gen_kwargs) if isinstance(options, RunFlags) else (options, None)
    from jaxeval.api import load_model
    from jaxeval.weights.loader import resolve_model_path
    from jaxeval.engine.distributed import initialize_distributed
    from jaxeval.io.inputs import check_model_folder
    from jaxeval.models.kv_policy import policy_of_flags
    from jaxeval.weights.maxtext import is_maxtext

    initialize_distributed()  # multi-host: before anything touches a device (jaxeval.engine.distributed)
    policy_of_flags(model)  # a bad policy is refused before the model folder is read
    if not is_maxtext(model.model):
        check_model_folder(resolve_model_path(model.model))
    from jaxeval.model_checks import check_model_flags

    check_model_flags(model, gen_kwargs)  # validate's checks of the flags against the config, before a weight is read
    return load_model(model.model, **model.load_arguments())


def cmd_run(args) -> int:
    """Run each of --tasks on one model, journaled and resumable; one results file (jaxeval/suite.py)."""
    import random

    import numpy as np

    from jaxeval.suite import run_suite

    from jaxeval.model_checks import check_seed

    flags = run_flags(args)
    tasks = flags.run.task_list()
    check_seed(flags.run.seed)  # before numpy meets it
    random.seed(flags.run.seed)
    np.random.seed(flags.run.seed)
    from jaxeval.aot.run_target import resolve_target

    flags = resolve_target(flags, tasks)  # --target: the batch and mesh that compile and fit it (docs/compile.md)
    if flags.run.steps:  # a training run's checkpoint folder, one run per step (jaxeval/series.py)
        from jaxeval.series import run_series

        return run_series(flags, tasks, _load)
    return run_suite(flags, tasks, _load)


def cmd_validate(args) -> int:
    from jaxeval.suite import validate_suite

    flags = run_flags(args)
    return validate_suite(flags, flags.run.task_list())


def cmd_plan(args) -> int:
    from jaxeval.plan.command import run_plan
    from jaxeval.suite import check_run

    flags = run_flags(args)
    tasks = flags.run.task_list()
    check_run(flags, tasks, create_output=False)
    from jaxeval.model_checks import check_model_flags

    check_model_flags(flags.model, flags.run.gen_kwargs, devices=False)  # plan may estimate for other hardware
    from jaxeval.plan.batch import resolve_batch_size

    flags, _ = resolve_batch_size(flags, tasks)  # --batch_size auto: the plan of the batch the run would choose
    loaded = _load(flags) if flags.flag("calibrate") == "model" else None
    return run_plan(flags, tasks, loaded)


def cmd_ls(args) -> int:
    """Benchmarks (tasks), their configs and lengths, from the registry's describe() hooks."""
    from jaxeval.benchmarks.registry import descriptions

    for task, info in descriptions().items():
        print(f"{task}: {info.get('about', '(no description)')}")
        for what in ("configs", "lengths"):
            if info.get(what):
                print(f"  {what}: {', '.join(map(str, info[what]))}")
    suites = sorted(RUN_CONFIGS.glob("**/*.yaml"))
    if suites:
        print(f"run configs (--config) in {RUN_CONFIGS}: {', '.join(str(p.relative_to(RUN_CONFIGS)) for p in suites)}")
    return 0


def cmd_convert(args) -> int:
    from jaxeval.weights.loader import convert, resolve_model_path
    from jaxeval.io.inputs import check_model_folder
    from jaxeval.io.outputs import check_output_file, writing

    check_output_file(args.dst, what="convert: the destination", overwrite=False)
    check_model_folder(resolve_model_path(args.src))
    with writing(args.dst, "convert: the destination"):
        out = convert(args.src, args.dst, dtype=args.dtype)
    print(f"wrote jaxeval Orbax checkpoint {out}")
    return 0


def cmd_report(args) -> int:
    """Headline tables and an HTML page of plots from results files (jaxeval/report/build.py)."""
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.io.outputs import check_output_folder, writing
    from jaxeval.report.build import build_report, check_reference_arguments

    check_output_folder(args.out, what="--out")  # before any result is read or plotted
    check_reference_arguments(args)
    with writing(args.out, "--out"):
        page = build_report(args.results, args.out, run_tasks(), embed=args.embed, reference=args.reference,
                            resamples=args.bootstrap, seed=args.bootstrap_seed, level=args.ci,
                            fraction=args.effective_fraction)
    print(f"\nwrote {page}")
    return 0


def cmd_score(args, extra: list[str]) -> int:
    """Re-score saved predictions without loading a model: the benchmark parses its own flags."""
    from jaxeval.benchmarks.registry import scorers

    benchmark = scorers()[args.benchmark]
    parser = argparse.ArgumentParser(prog=f"jaxeval score --benchmark {args.benchmark}")
    benchmark.add_score_arguments(parser)
    return benchmark.rescore(benchmark.score_options(parser.parse_args(extra)))


def cmd_curve(args) -> int:
    from jaxeval.curve.command import cmd_curve as curve

    return curve(args, _load)


def cmd_serve(args) -> int:
    from jaxeval.serve.cli import cmd_serve as serve

    return serve(args)


def cmd_bench(args) -> int:
    from jaxeval.bench.cli import cmd_bench as bench

    return bench(args)


def cmd_compile(args) -> int:
    from jaxeval.aot.command import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    from jaxeval.benchmarks.registry import benchmarks, scorers
    from jaxeval.run_flags import add_run_arguments

    parser = argparse.ArgumentParser(prog="jaxeval", description="Long-context LM evaluation in JAX/Flax")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a suite (default: agent_bench at 8k on the embedded model and sample)")
    add_run_arguments(run, benchmarks())
    from jaxeval.aot.run_target import add_target_argument

    add_target_argument(run)
    run.set_defaults(func=cmd_run, parser=run)

    validate = sub.add_parser("validate", help="check a run's config, model config, tokenizer and data first")
    add_run_arguments(validate, benchmarks())
    validate.set_defaults(func=cmd_validate, parser=validate)

    plan = sub.add_parser("plan", help="what `jaxeval run` with the same flags will cost: items, tokens, FLOPs, "
                                       "memory, time, judge calls (config and tokenizer only)")
    add_run_arguments(plan, benchmarks())
    plan.set_defaults(func=cmd_plan, parser=plan)

    aot = sub.add_parser("compile", help="compile every program of a run for a TPU or GPU target on this machine "
                                         "(no chip, no weights): memory per chip, FLOPs, time (docs/compile.md)")
    from jaxeval.aot.command import add_arguments as _compile_arguments

    _compile_arguments(aot)
    aot.set_defaults(func=cmd_compile)

    ls = sub.add_parser("ls", help="list benchmarks (tasks), their configs and lengths")
    ls.set_defaults(func=cmd_ls)

    for benchmark in benchmarks():  # commands of their own (`jaxeval agent-bench`)
        benchmark.add_commands(sub, _model_options, _load)

    score = sub.add_parser("score", help="re-score saved predictions (no model); "
                                         "`jaxeval score --benchmark NAME --help` lists NAME's flags",
                           add_help=False)
    score.add_argument("--benchmark", choices=tuple(scorers()), required=True)
    score.set_defaults(func=cmd_score)

    conv = sub.add_parser("convert", help="HF safetensors folder -> jaxeval Orbax checkpoint")
    conv.add_argument("src")
    conv.add_argument("dst")
    conv.add_argument("--dtype", choices=("float32", "bfloat16"), default=None)
    conv.set_defaults(func=cmd_convert)

    from jaxeval.curve.command import add_arguments as add_curve_arguments
    curve = sub.add_parser("curve", help="mean log-prob and top-1 rate per position bucket of one long text; with "
                                         "--reference, KL and top-1 agreement against a second model (docs/curve.md)")
    _model_options(curve, str(EMBEDDED_MODEL))
    add_curve_arguments(curve)
    curve.set_defaults(func=cmd_curve)

    from jaxeval.report.build import add_report_arguments
    report = sub.add_parser("report", help="headline tables and an HTML page of plots from results files")
    add_report_arguments(report)
    report.set_defaults(func=cmd_report)

    from jaxeval.serve.cli import add_arguments as add_serve_arguments
    serve = sub.add_parser("serve", help="OpenAI-compatible chat-completions server (127.0.0.1 by default)")
    add_serve_arguments(serve)
    serve.set_defaults(func=cmd_serve)

    from jaxeval.bench.cli import add_arguments as add_bench_arguments
    bench = sub.add_parser("bench", help="speed, memory and MFU against transformers on the same weights (docs/performance.md)")
    add_bench_arguments(bench)
    bench.set_defaults(func=cmd_bench)
    return parser


def _apply_config_file(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Make the --config YAML's values the defaults of `run` / `validate`, so flags given on the
    command line win over the file and the file over the built-in defaults."""
    from jaxeval.run.config import load_yaml_config

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("command", nargs="?")
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args(argv)
    if known.command not in ("run", "validate", "plan") or not known.config:
        return
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[known.command]
    from jaxeval.benchmarks.settings import DeprecatedAlias

    actions = {a.dest: a for a in sub._actions if a.dest not in ("help", "func", "parser")
               and not isinstance(a, DeprecatedAlias)}
    actions.update({a.option_strings[0].lstrip("-"): a for a in sub._actions if isinstance(a, DeprecatedAlias)})
    sub.set_defaults(**load_yaml_config(known.config, actions))


_error = print_user_error


def main(argv: list[str] | None = None, *, exit_process: bool | None = None) -> int:
    """Run one command; its exit status. SIGTERM / SIGINT end it with 143 / 130 (jaxeval/interrupt.py),
    from the moment the flags are being parsed. exit_process (default: when argv is None, i.e. as
    the program): after a signal, end the process with os._exit once the output is flushed."""
    import contextlib

    import jaxeval.interrupt as interrupt

    exit_process = argv is None if exit_process is None else exit_process
    argv = sys.argv[1:] if argv is None else list(argv)
    with contextlib.ExitStack() as signals:
        signals.enter_context(interrupt.handle_signals())
        try:
            code = _parse_and_call(argv, signals.close)
        except interrupt.Terminated as stop:
            print(interrupt.message(stop.signum), file=sys.stderr)
            code = stop.exit_code
        if interrupt.signalled() is not None and code < 128:  # the signal came after the last safe point
            print(interrupt.message(interrupt.signalled(), " after the command's work was done"), file=sys.stderr)
            code = 128 + interrupt.signalled()
    if code >= 128 and exit_process:
        interrupt.exit_process(code)
    return code


def _parse_and_call(argv: list[str], release_signals) -> int:
    from jaxeval.interrupt import checkpoint

    parser = build_parser()
    try:
        _apply_config_file(parser, argv)
    except JaxevalError as e:
        return _error(e)
    args, extra = parser.parse_known_args(argv)
    if args.func is not cmd_score and extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    checkpoint()
    if args.func is cmd_serve:  # serves until Ctrl-C, which it handles itself
        release_signals()
    return _call(args, extra)


def _call(args, extra: list[str]) -> int:
    try:
        return args.func(args, extra) if args.func is cmd_score else args.func(args)
    except JaxevalError as e:
        return _error(e)
    except (OSError, UnicodeDecodeError) as e:  # a user's file or folder no reader named: still one line
        return _error(JaxevalError(_describe_os_error(e)))


def _describe_os_error(e: OSError | UnicodeDecodeError) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"a file is not UTF-8 text ({e.reason} at byte {e.start})"
    where = " -> ".join(str(name) for name in (e.filename, getattr(e, "filename2", None)) if name)
    return f"{where or 'a file'}: {e.strerror or type(e).__name__}"


if __name__ == "__main__":
    sys.exit(main())
