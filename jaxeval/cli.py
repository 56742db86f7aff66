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
EMBEDDED_AGENT_DATA = Path(__file__).parent / "assets" / "agent_bench_sample"


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


def _split_list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def _agent_bench(model, args) -> tuple[dict, str]:
    from jaxeval.benchmarks.agent_bench import format_rows_table, run_agent_bench

    if model.tokenizer is None:
        raise JaxevalError(f"{args.model}: the model folder has no tokenizer; longctx-agent-bench needs one")
    result = run_agent_bench(model, model.tokenizer, args.data, sets=_split_list(args.sets),
                             lengths=_split_list(args.lengths), limit=args.limit, mode=args.mode,
                             save_scores=args.save_scores, reference_scores=args.reference_scores)
    return result, format_rows_table(result)


def _longbench(model, args, e: bool) -> tuple[dict, str]:
    from jaxeval.benchmarks.longbench import format_scores_table, run_longbench

    if model.tokenizer is None:
        raise JaxevalError(f"{args.model}: the model folder has no tokenizer; LongBench needs one")
    kwargs = {"data": args.longbench_data} if args.longbench_data else {}
    result = run_longbench(model, model.tokenizer, e=e, limit=args.limit, batch_size=args.batch_size, **kwargs)
    return result, format_scores_table(result)


TASKS = {
    "agent_bench": _agent_bench,
    "longbench": lambda model, args: _longbench(model, args, e=False),
    "longbench_e": lambda model, args: _longbench(model, args, e=True),
}


def _write(result: dict, model, args, t0: float) -> None:
    from jaxeval.results.files import write_json_atomic
    from jaxeval.results.metadata import run_metadata

    result["run"] = run_metadata(model, time.perf_counter() - t0)
    if args.out:
        print(f"wrote {write_json_atomic(args.out, result)}")


def cmd_agent_bench(args) -> int:
    t0 = time.perf_counter()
    model = _load(args)
    result, table = _agent_bench(model, args)
    result["data"] = str(args.data)
    print(table)
    _write(result, model, args, t0)
    return 0


def cmd_run(args) -> int:
    """Run each of --tasks on one model; one results file with a section per task."""
    tasks = _split_list(args.tasks)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise JaxevalError(f"unknown task {unknown[0] if unknown else '(none)'!r}; available: {', '.join(TASKS)}")
    if args.out is None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        args.out = str(Path(args.output_path) / f"{Path(args.model).name}-{stamp}.json")
    t0 = time.perf_counter()
    model = _load(args)
    results = {}
    for task in tasks:
        results[task], table = TASKS[task](model, args)
        print(f"\n{task}\n{table}")
    _write({"tasks": results}, model, args, t0)
    return 0


def cmd_convert(args) -> int:
    from jaxeval.api import convert

    out = convert(args.src, args.dst, dtype=args.dtype)
    print(f"wrote jaxeval Orbax checkpoint {out}")
    return 0


def cmd_score(args) -> int:
    """Re-score saved predictions without loading a model."""
    from jaxeval.benchmarks.longbench.cli import cmd_score_longbench

    return cmd_score_longbench(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxeval", description="Long-context LM evaluation in JAX/Flax")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a suite (default: facts at 8k on the embedded model and sample)")
    _model_options(run, str(EMBEDDED_MODEL))
    run.add_argument("--tasks", default="agent_bench", help=f"comma-separated: {', '.join(TASKS)}")
    run.add_argument("--batch_size", type=int, default=8, help="prompts generated together")
    run.add_argument("--longbench_data", default=None, help="LongBench JSONL folder (default: embedded sample)")
    run.add_argument("--data", default=str(EMBEDDED_AGENT_DATA), help="agent_bench: folder or hub id")
    run.add_argument("--sets", default="facts,tool_calls,rules_en,rules_cs,rules_de", help="agent_bench configs")
    run.add_argument("--lengths", default="8k", help="agent_bench splits")
    run.add_argument("--mode", choices=("auto", "text"), default="auto")
    run.add_argument("--limit", type=int, default=None, help="first N items per config and length")
    run.add_argument("--save_scores", default=None, help="agent_bench rules: write every target's scores")
    run.add_argument("--reference_scores", default=None, help="agent_bench rules: the reference's saved scores")
    run.add_argument("--output_path", default="results", help="folder for the results JSON")
    run.add_argument("--out", default=None, help="exact results file (overrides --output_path)")
    run.set_defaults(func=cmd_run)

    ab = sub.add_parser("agent-bench", help="longctx-agent-bench, teacher-forced")
    _model_options(ab, None)
    ab.add_argument("--data", default="thinletter/longctx-agent-bench", help="hub id or local folder")
    ab.add_argument("--sets", default="facts", help="comma-separated configs")
    ab.add_argument("--lengths", default="8k,32k", help="comma-separated splits")
    ab.add_argument("--limit", type=int, default=None, help="first N items per config and length")
    ab.add_argument("--mode", choices=("auto", "text"), default="auto")
    ab.add_argument("--out", default=None, help="output JSON file")
    ab.add_argument("--save_scores", default=None, help="rules: write every target's scores (FILE.json.gz)")
    ab.add_argument("--reference_scores", default=None, help="rules: the reference model's saved scores")
    ab.set_defaults(func=cmd_agent_bench)

    score = sub.add_parser("score", help="re-score saved predictions (no model)")
    score.add_argument("--benchmark", choices=("longbench",), required=True)
    from jaxeval.benchmarks.longbench.cli import add_score_arguments

    add_score_arguments(score)
    score.set_defaults(func=cmd_score)

    conv = sub.add_parser("convert", help="HF safetensors folder -> jaxeval Orbax checkpoint")
    conv.add_argument("src")
    conv.add_argument("dst")
    conv.add_argument("--dtype", choices=("float32", "bfloat16"), default=None)
    conv.set_defaults(func=cmd_convert)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except JaxevalError as e:
        print(f"jaxeval: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
