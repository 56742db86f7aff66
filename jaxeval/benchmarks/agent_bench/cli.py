"""`jaxeval agent-bench`: longctx-agent-bench with the card's own flag names (--data, --sets,
--lengths, --mode, --out), writing the benchmark's own result file with a `run` section.
`jaxeval run --tasks agent_bench` is the journaled path (benchmark.py)."""

from __future__ import annotations

import argparse
import time


def add_command(subparsers, model_options, load_model, benchmark) -> None:
    """`jaxeval agent-bench`: the card's own flags, run through `benchmark` (agent_bench's Benchmark)."""
    command = subparsers.add_parser("agent-bench", help="longctx-agent-bench, teacher-forced")
    model_options(command, None)
    command.add_argument("--data", default="thinletter/longctx-agent-bench", help="folder or hub id")
    command.add_argument("--sets", default="facts", help="comma-separated configs")
    command.add_argument("--lengths", default="8k,32k", help="comma-separated splits")
    command.add_argument("--mode", choices=("auto", "text"), default="auto", help="alignment mode")
    command.add_argument("--save_scores", default=None, help="rules: write every target's scores")
    command.add_argument("--reference_scores", default=None, help="rules: the reference's saved scores")
    command.add_argument("--limit", type=int, default=None, help="first N items per config and length")
    command.add_argument("--batch_size", type=int, default=8, help="texts of one length bucket read together (on accelerators; CPU: one per step)")
    command.add_argument("--out", default=None, help="output JSON file")
    command.set_defaults(func=lambda args: cmd_agent_bench(args, load_model, benchmark))


def cmd_agent_bench(args: argparse.Namespace, load_model, benchmark) -> int:
    from jaxeval.benchmarks.base import RunContext
    from jaxeval.engine.distributed import is_writer
    from jaxeval.io.outputs import check_output_file
    from jaxeval.io.json_files import write_json_atomic
    from jaxeval.run.metadata import run_metadata

    for path in filter(None, (args.out, args.save_scores)):
        check_output_file(path)  # before the model loads: a path that cannot be written is one line
    t0 = time.perf_counter()
    from jaxeval.options.model import ModelOptions

    model = load_model(ModelOptions.of(args))  # cli._load: the model flags checked, then loaded
    settings = benchmark.Settings(data=args.data, sets=args.sets, lengths=args.lengths, mode=args.mode,
                                  save_scores=args.save_scores, reference_scores=args.reference_scores)
    ctx = RunContext("agent_bench", model, limit=args.limit, batch_size=args.batch_size, model_path=args.model)
    result, table = benchmark.run(ctx, settings)
    result["data"] = str(args.data)
    print(table)
    result["run"] = run_metadata(model, time.perf_counter() - t0)
    if args.out and is_writer():
        print(f"wrote {write_json_atomic(args.out, result)}")
    return 0
