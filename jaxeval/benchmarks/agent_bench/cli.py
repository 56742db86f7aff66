"""The longctx-agent-bench part of the CLI: its `jaxeval run` task and its flags.

jaxeval/cli.py owns `run`; see jaxeval/benchmarks/registry.py for the hooks a benchmark provides.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jaxeval.errors import JaxevalError

EMBEDDED_AGENT_DATA = Path(__file__).resolve().parents[2] / "assets" / "agent_bench_sample"


def split_list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def add_run_arguments(p: argparse.ArgumentParser, default_data: str = str(EMBEDDED_AGENT_DATA),
                      default_sets: str = "facts,tool_calls,rules_en,rules_cs,rules_de",
                      default_lengths: str = "8k") -> None:
    p.add_argument("--data", default=default_data, help="agent_bench: folder or hub id")
    p.add_argument("--sets", default=default_sets, help="agent_bench: comma-separated configs")
    p.add_argument("--lengths", default=default_lengths, help="agent_bench: comma-separated splits")
    p.add_argument("--mode", choices=("auto", "text"), default="auto", help="agent_bench: alignment mode")
    p.add_argument("--save_scores", default=None, help="agent_bench rules: write every target's scores")
    p.add_argument("--reference_scores", default=None, help="agent_bench rules: the reference's saved scores")


def run_task(model, args) -> tuple[dict, str]:
    """Teacher-forced reads of every selected config and length; (result, table)."""
    from jaxeval.benchmarks.agent_bench import format_rows_table, run_agent_bench

    if model.tokenizer is None:
        raise JaxevalError(f"{args.model}: the model folder has no tokenizer; longctx-agent-bench needs one")
    result = run_agent_bench(model, model.tokenizer, args.data, sets=split_list(args.sets),
                             lengths=split_list(args.lengths), limit=args.limit, mode=args.mode,
                             save_scores=args.save_scores, reference_scores=args.reference_scores)
    return result, format_rows_table(result)


TASKS = {"agent_bench": run_task}
