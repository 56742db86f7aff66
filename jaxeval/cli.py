"""`jaxeval` command line: run, agent-bench, score, convert.

Flag names follow lm-eval-harness (--model, --model_args, --tasks, --limit, --output_path) and
the longctx-agent-bench card (--data, --sets, --lengths, --mode, --out).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jaxeval.errors import JaxevalError

EMBEDDED_MODEL = Path(__file__).parent / "assets" / "tiny_llama"


def _default_dtype() -> str:
    import jax

    return "float32" if jax.default_backend() == "cpu" else "bfloat16"


def _model_options(p: argparse.ArgumentParser, default_model: str | None):
    p.add_argument("--model", default=default_model, required=default_model is None,
                   help="HF safetensors folder, jaxeval Orbax checkpoint folder or hub id")
    p.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto",
                   help="auto: float32 on CPU, bfloat16 on accelerators")
    p.add_argument("--attention", choices=("chunked", "xla"), default="chunked")
    p.add_argument("--prefill_chunk", type=int, default=2048, help="tokens per prefill step")


def _load(args):
    from jaxeval.api import load_model

    dtype = _default_dtype() if args.dtype == "auto" else args.dtype
    return load_model(args.model, dtype=dtype, attention=args.attention, prefill_chunk=args.prefill_chunk)


def _write(result: dict, model, args, t0: float) -> None:
    from jaxeval.results.files import write_json_atomic
    from jaxeval.results.metadata import run_metadata

    result["run"] = run_metadata(model, time.perf_counter() - t0)
    if args.out:
        print(f"wrote {write_json_atomic(args.out, result)}")


def cmd_agent_bench(args) -> int:
    from jaxeval.benchmarks.agent_bench.cli import run_task

    t0 = time.perf_counter()
    model = _load(args)
    result, table = run_task(model, args)
    result["data"] = str(args.data)
    print(table)
    _write(result, model, args, t0)
    return 0


def cmd_run(args) -> int:
    """Run each of --tasks on one model; one results file with a section per task."""
    from jaxeval.benchmarks.agent_bench.cli import split_list
    from jaxeval.benchmarks.registry import run_tasks

    available = run_tasks()
    tasks = split_list(args.tasks)
    unknown = [t for t in tasks if t not in available]
    if unknown or not tasks:
        raise JaxevalError(f"unknown task {unknown[0] if unknown else '(none)'!r}; available: {', '.join(available)}")
    if args.out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        args.out = str(Path(args.output_path) / f"{Path(args.model).name}-{stamp}.json")
    t0 = time.perf_counter()
    model = _load(args)
    results = {}
    for task in tasks:
        results[task], table = available[task](model, args)
        print(f"\n{task}\n{table}")
    _write({"tasks": results}, model, args, t0)
    return 0


def cmd_convert(args) -> int:
    from jaxeval.api import convert

    out = convert(args.src, args.dst, dtype=args.dtype)
    print(f"wrote jaxeval Orbax checkpoint {out}")
    return 0


def cmd_score(args, extra: list[str]) -> int:
    """Re-score saved predictions without loading a model: the benchmark parses its own flags."""
    from jaxeval.benchmarks.registry import scorers

    module = scorers()[args.benchmark]
    parser = argparse.ArgumentParser(prog=f"jaxeval score --benchmark {args.benchmark}")
    module.add_score_arguments(parser)
    return module.cmd_score(parser.parse_args(extra))


def build_parser() -> argparse.ArgumentParser:
    from jaxeval.benchmarks.agent_bench.cli import add_run_arguments as add_agent_bench_arguments
    from jaxeval.benchmarks.registry import cli_modules, scorers

    parser = argparse.ArgumentParser(prog="jaxeval", description="Long-context LM evaluation in JAX/Flax")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a suite (default: facts at 8k on the embedded model and sample)")
    _model_options(run, str(EMBEDDED_MODEL))
    run.add_argument("--tasks", default="agent_bench", help="comma-separated (jaxeval.benchmarks.registry)")
    run.add_argument("--limit", type=int, default=None, help="first N items per config and length")
    run.add_argument("--batch_size", type=int, default=8, help="prompts generated together")
    run.add_argument("--output_path", default="results", help="folder for the results JSON")
    run.add_argument("--out", default=None, help="exact results file (overrides --output_path)")
    for module in cli_modules():
        if hasattr(module, "add_run_arguments"):
            module.add_run_arguments(run)
    run.set_defaults(func=cmd_run)

    ab = sub.add_parser("agent-bench", help="longctx-agent-bench, teacher-forced")
    _model_options(ab, None)
    add_agent_bench_arguments(ab, default_data="thinletter/longctx-agent-bench", default_sets="facts",
                              default_lengths="8k,32k")
    ab.add_argument("--limit", type=int, default=None, help="first N items per config and length")
    ab.add_argument("--out", default=None, help="output JSON file")
    ab.set_defaults(func=cmd_agent_bench)

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
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.func is not cmd_score and extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args, extra) if args.func is cmd_score else args.func(args)
    except JaxevalError as e:
        print(f"jaxeval: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
