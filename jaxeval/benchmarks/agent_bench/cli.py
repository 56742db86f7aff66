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
                             save_scores=args.save_scores, reference_scores=args.reference_scores,
                             journal=getattr(args, "journal", None))
    return result, format_rows_table(result)


TASKS = {"agent_bench": run_task}
VERSION = "1"  # of jaxeval's implementation; bump when a number it reports changes


def describe() -> dict:
    """`jaxeval ls`: task -> what it is, its configs and lengths."""
    from jaxeval.benchmarks.agent_bench import CONFIGS, SPLITS

    return {"agent_bench": {"about": "longctx-agent-bench: facts, tool calls and rules far back (teacher-forced)",
                            "configs": list(CONFIGS), "lengths": list(SPLITS)}}


def validate(task: str, args) -> list[str]:
    """`jaxeval validate`: load and check every selected config and length (DataError if not)."""
    from jaxeval.benchmarks.agent_bench import load_split

    checked = []
    for config in split_list(args.sets):
        for split in split_list(args.lengths):
            items = load_split(args.data, config, split)
            checked.append(f"agent_bench {config}/{split}: {len(items)} items valid")
    return checked


def summarize(task: str, result: dict) -> dict:
    """The results-JSON sections of an agent_bench result (docs/results_schema.md)."""
    results, n_samples, lengths, higher = {}, {}, {}, {}
    for config, splits in result["sets"].items():
        for split, metrics in splits.items():
            leaf = f"{task}/{config}/{split}"
            results[leaf] = {name: value for name, value in metrics.items()
                             if isinstance(value, float) or (value is None and name != "mode")}
            higher[leaf] = {name: True for name in results[leaf]}
            n_samples[leaf] = {"original": None, "effective": metrics["items"]}
            lengths[leaf] = split
    headline = [{**row, "subtask": f"{task}/{row['config']}/{row['split']}"} for row in result["rows"]]
    deviations = list(result["mode_notes"])
    if result["reference"] and result["reference"]["note"]:
        deviations.append(result["reference"]["note"])
    return {"results": results, "higher_is_better": higher, "n-samples": n_samples, "lengths": lengths,
            "headline": headline, "versions": VERSION, "deviations": deviations,
            "configs": {"mode_requested": result["mode_requested"], "mode": result["mode"],
                        "reference": result["reference"]},
            "truncation": {"policy": "none: a text longer than the model's window is an error"},
            "chat_template": "none: raw session text, teacher-forced"}
