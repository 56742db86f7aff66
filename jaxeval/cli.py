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

RUN_CONFIGS = Path(__file__).resolve().parents[1] / "configs"  # a checkout's configs/ (example.yaml, suites/)


def _yes_no(text: str) -> bool:
    value = str(text).strip().lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value in ("true", "1", "yes")


def _model_options(p: argparse.ArgumentParser, default_model: str | None):
    p.add_argument("--model", default=default_model, required=default_model is None,
                   help="HF safetensors folder, jaxeval Orbax checkpoint folder or hub id")
    p.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                   help="auto: float32 on CPU, bfloat16 on accelerators")
    p.add_argument("--attention", choices=("chunked", "xla", "splash", "cudnn"), default="chunked",
                   help="chunked: any platform; splash: TPU; cudnn: GPU (bfloat16); xla: reference")
    p.add_argument("--prefill_chunk", type=int, default=2048, help="tokens per prefill step")
    p.add_argument("--quantize", choices=("none", "int8", "int4", "fp8"), default="none",
                   help="round every matmul weight at load and keep it so on the device (what-if studies): int8 "
                        "per channel, int4 per group of --quant_group rows, fp8 e4m3 per channel")
    p.add_argument("--quant_group", type=int, default=128, help="input rows per int4 scale")
    p.add_argument("--dequantize", type=_yes_no, default=False, metavar="{true,false}",
                   help="a GGUF checkpoint: dequantize every tensor at load (float, as transformers does) "
                        "instead of keeping the matmul weights in their block codes on the device")
    p.add_argument("--kv_cache", default="exact", metavar="{exact,int8,fp8,streaming,snapkv}",
                   help="KV-cache policy of reads and generation (recorded; part of the run name): int8 / fp8 codes "
                        "with a float32 scale per token and head; streaming: attention sinks plus a recent window "
                        "(StreamingLLM, RoPE at the original positions); snapkv: a prompt compressed to --kv_budget "
                        "positions per layer and KV head before generating (generation only)")
    p.add_argument("--kv_sinks", type=int, default=None, help="streaming: first positions every query sees (4)")
    p.add_argument("--kv_window", type=int, default=None,
                   help="streaming: last positions every query sees, itself included (4096)")
    p.add_argument("--kv_budget", type=int, default=None,
                   help="snapkv: prompt positions kept per layer and KV head, the observation window included (1024)")
    p.add_argument("--kv_observe", type=int, default=None,
                   help="snapkv: the prompt's last tokens whose attention votes, all kept (32)")
    p.add_argument("--kv_kernel", type=int, default=None, help="snapkv: pooling width of the votes, odd (7)")
    p.add_argument("--kv_pool", choices=("max", "avg"), default=None, help="snapkv: vote pooling (max)")
    p.add_argument("--maxtext_config", default=None,
                   help="a MaxText checkpoint's model config: MaxText's overrides as its command line takes them "
                        "('model_name=llama3.1-8b scan_layers=True ...'), optionally led by a run's YAML (docs/maxtext.md)")
    p.add_argument("--model_config", default=None,
                   help="a MaxText checkpoint's model config as a Hugging Face config.json (model_args key: config)")
    p.add_argument("--tokenizer", default=None, help="tokenizer folder or hub id (a MaxText checkpoint holds none)")
    p.add_argument("--mapping", default=None, metavar="FILE|NAME",
                   help="another JAX trainer's checkpoint: a mapping (YAML / JSON file, or a built-in: easydel) from "
                        "its tree onto jaxeval's parameters (docs/training.md)")
    p.add_argument("--mesh", default=None,
                   help="device mesh, e.g. data=2,tensor=2,context=2 (axes data, fsdp, tensor, context; unnamed = 1), "
                        "or auto; default: one device. Multi-host: set JAXEVAL_COORDINATOR, JAXEVAL_NUM_PROCESSES, "
                        "JAXEVAL_PROCESS_ID (or JAXEVAL_DISTRIBUTED=1 on Cloud TPU); process 0 writes the results")


def _load(args):
    from jaxeval.api import load_model
    from jaxeval.weights.loader import resolve_model_path
    from jaxeval.engine.distributed import initialize_distributed
    from jaxeval.io.inputs import check_model_folder
    from jaxeval.models.kv_policy import policy_of_flags
    from jaxeval.weights.maxtext import is_maxtext

    initialize_distributed()  # multi-host: before anything touches a device (jaxeval.engine.distributed)
    kv_cache = policy_of_flags(args)  # a bad policy is refused before the model folder is read
    if not is_maxtext(args.model):
        check_model_folder(resolve_model_path(args.model))
    from jaxeval.model_checks import check_model_flags

    check_model_flags(args)  # validate's checks of the flags against the config, before a weight is read
    return load_model(args.model, dtype=args.dtype, attention=args.attention, prefill_chunk=args.prefill_chunk,
                      mesh=getattr(args, "mesh", None), quantize=getattr(args, "quantize", None),
                      quant_group=getattr(args, "quant_group", 128), dequantize=getattr(args, "dequantize", False),
                      kv_cache=kv_cache, maxtext_config=getattr(args, "maxtext_config", None),
                      config=getattr(args, "model_config", None), tokenizer=getattr(args, "tokenizer", None),
                      mapping=getattr(args, "mapping", None), **getattr(args, "config_overrides", {}))


def _resolve_run(args, parser: argparse.ArgumentParser) -> list[str]:
    """The task list, with --model_args applied to the model flags."""
    from jaxeval.run.config import apply_model_args

    apply_model_args(args, parser)
    return [task.strip() for task in args.tasks.split(",") if task.strip()]


def cmd_run(args) -> int:
    """Run each of --tasks on one model, journaled and resumable; one results file (jaxeval/suite.py)."""
    import random

    import numpy as np

    from jaxeval.suite import run_suite

    from jaxeval.model_checks import check_seed

    tasks = _resolve_run(args, args.parser)
    check_seed(args)  # before numpy meets it
    random.seed(args.seed)
    np.random.seed(args.seed)
    del args.parser
    from jaxeval.aot.run_target import resolve_target

    resolve_target(args, tasks)  # --target: the batch and mesh that compile and fit it (docs/compile.md)
    if getattr(args, "steps", None):  # a training run's checkpoint folder, one run per step (jaxeval/series.py)
        from jaxeval.series import run_series

        return run_series(args, tasks, _load)
    return run_suite(args, tasks, _load)


def cmd_validate(args) -> int:
    from jaxeval.suite import validate_suite

    return validate_suite(args, _resolve_run(args, args.parser))


def cmd_plan(args) -> int:
    from jaxeval.plan.command import run_plan
    from jaxeval.suite import check_run

    tasks = _resolve_run(args, args.parser)
    del args.parser
    check_run(args, tasks, create_output=False)
    from jaxeval.model_checks import check_model_flags

    check_model_flags(args, devices=False)  # plan may estimate for other hardware than this
    from jaxeval.plan.batch import resolve_batch_size

    resolve_batch_size(args, tasks)  # --batch_size auto: the plan of the batch the run would choose
    return run_plan(args, tasks, _load(args) if args.calibrate == "model" else None)


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
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.report.build import cmd_report as report

    return report(args, run_tasks())


def cmd_score(args, extra: list[str]) -> int:
    """Re-score saved predictions without loading a model: the benchmark parses its own flags."""
    from jaxeval.benchmarks.registry import scorers

    benchmark = scorers()[args.benchmark]
    parser = argparse.ArgumentParser(prog=f"jaxeval score --benchmark {args.benchmark}")
    benchmark.add_score_arguments(parser)
    return benchmark.rescore(parser.parse_args(extra))


def cmd_curve(args) -> int:
    from jaxeval.curve.command import cmd_curve as curve

    return curve(args, _load)


def cmd_serve(args) -> int:
    from jaxeval.serve.cli import cmd_serve as serve

    return serve(args)


def cmd_bench(args) -> int:
    from jaxeval.bench.cli import cmd_bench as bench

    return bench(args)


def _run_options(p: argparse.ArgumentParser, benchmarks) -> None:
    """The flags of `jaxeval run` (lm-eval's names) and every benchmark's own."""
    _model_options(p, str(EMBEDDED_MODEL))
    p.add_argument("--model_args", default=None, help="k=v,... for the model flags (dtype, attention, "
                   "prefill_chunk, pretrained=PATH), which they override, and config.json fields to replace "
                   "(rope_scaling={...JSON...}, max_position_embeddings=N, ...: recorded and hashed into the run)")
    p.add_argument("--tasks", default="agent_bench", help="comma-separated (`jaxeval ls`)")
    from jaxeval.benchmarks.base import parse_limit

    p.add_argument("--limit", type=parse_limit, default=None,
                   help="first N items per config and length; 0 < N < 1: that fraction of each, rounded up (lm-eval)")
    from jaxeval.plan.batch import parse_batch_size

    p.add_argument("--batch_size", type=parse_batch_size, default=8,
                   help="prompts generated together (agent_bench: texts read together, on accelerators; on CPU one "
                        "per step, which measured faster), one length bucket per batch; "
                        "auto: the most whose KV cache at the run's longest length fits "
                        "in device memory (CPU: host memory) beside the weights, at most 64; auto:N: at most N")
    p.add_argument("--seed", type=int, default=0, help="seed of anything sampled (recorded in the results)")
    p.add_argument("--output_path", default="results",
                   help="folder (local, gs://, any fsspec URL) for results, journal and samples")
    p.add_argument("--out", default=None, help="exact results file (overrides --output_path for it)")
    p.add_argument("--gen_kwargs", default=None,
                   help="lm-eval's generation settings over each benchmark's own: temperature, top_p, do_sample, "
                        "max_gen_toks (= max_new_tokens, replacing the per-dataset budget), until (stop strings), "
                        "as k=v,... (until=[\"\\n\"]) or JSON; hashed into the run, listed in deviations")
    p.add_argument("--log_samples", action="store_true", help="also write one JSONL line per sample (the prompt's "
                   "sha256 and length in tokens, the target, the raw output, the scores)")
    p.add_argument("--log_samples_prompts", action="store_true",
                   help="--log_samples with each prompt's full text in its line (large at long context)")
    p.add_argument("--config", default=None, help="run config YAML: keys mirror these flags; flags win")
    p.add_argument("--journal", dest="journal_mode", choices=("resume", "recover"), default="resume",
                   help="resume: reuse the run's journal, refusing a damaged one; recover: keep every intact "
                        "line of a damaged journal (and say how many were dropped)")
    p.add_argument("--host_split", choices=("auto", "on", "off"), default="auto",
                   help="multi-host: each process computes its share of the samples (auto: unless "
                        "the --mesh spans hosts, when every process must run every sample)")
    p.add_argument("--steps", default=None, metavar="{all,latest,every:N,STEP,...}",
                   help="--model is a training run's checkpoint folder (RUN/checkpoints): score each committed "
                        "step it selects, one results file per step and a series file (jaxeval/series.py)")
    p.add_argument("--watch", action="store_true", help="with --steps: wait for new steps as they are committed")
    p.add_argument("--watch_poll", type=float, default=30.0, help="--watch: seconds between looks (0.1 to 600)")
    p.add_argument("--watch_max_wait", type=float, default=3600.0,
                   help="--watch: stop when no new step has been committed for this many seconds")
    p.add_argument("--tensorboard", default=None, metavar="DIR",
                   help="with --steps: write each step's scores to DIR as TensorBoard scalars at their step")
    from jaxeval.judges.options import add_judge_arguments

    add_judge_arguments(p)  # any benchmark's judges
    from jaxeval.report.build import add_reference_arguments

    add_reference_arguments(p, run=True)  # --reference ORIGINAL: the paired comparison beside the results
    from jaxeval.plan.options import add_plan_arguments

    add_plan_arguments(p)  # the estimate `jaxeval plan` prints and `jaxeval run` records
    for benchmark in benchmarks:  # each benchmark's Settings: --<benchmark>_<field>
        benchmark.add_arguments(p)


def cmd_compile(args) -> int:
    from jaxeval.aot.command import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    from jaxeval.benchmarks.registry import benchmarks, scorers

    parser = argparse.ArgumentParser(prog="jaxeval", description="Long-context LM evaluation in JAX/Flax")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a suite (default: agent_bench at 8k on the embedded model and sample)")
    _run_options(run, benchmarks())
    from jaxeval.aot.run_target import add_target_argument

    add_target_argument(run)
    run.set_defaults(func=cmd_run, parser=run)

    validate = sub.add_parser("validate", help="check a run's config, model config, tokenizer and data first")
    _run_options(validate, benchmarks())
    validate.set_defaults(func=cmd_validate, parser=validate)

    plan = sub.add_parser("plan", help="what `jaxeval run` with the same flags will cost: items, tokens, FLOPs, "
                                       "memory, time, judge calls (config and tokenizer only)")
    _run_options(plan, benchmarks())
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
