"""The LongBench part of the CLI: `jaxeval run --tasks longbench,longbench_e` and re-scoring
official pred.py output without a model:

    jaxeval score --benchmark longbench --predictions pred/<model> [--e] [--output_path DIR]

The hooks are described in jaxeval/benchmarks/registry.py.
"""

from __future__ import annotations

import argparse

from jaxeval.benchmarks.longbench.metrics import ROUGE_NESTED_CALL_LIMITS, ScoringOptions
from jaxeval.errors import JaxevalError
from jaxeval.metrics.edit_similarity import BACKENDS


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--longbench_data", default=None, help="LongBench JSONL folder (default: embedded sample)")


def run_task(model, args, e: bool) -> tuple[dict, str]:
    from jaxeval.benchmarks.longbench import format_scores_table, run_longbench

    if model.tokenizer is None:
        raise JaxevalError(f"{args.model}: the model folder has no tokenizer; LongBench needs one")
    kwargs = {"data": args.longbench_data} if args.longbench_data else {}
    result = run_longbench(model, model.tokenizer, e=e, limit=args.limit, batch_size=args.batch_size, **kwargs)
    return result, format_scores_table(result)


TASKS = {
    "longbench": lambda model, args: run_task(model, args, e=False),
    "longbench_e": lambda model, args: run_task(model, args, e=True),
}


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `jaxeval score --benchmark longbench` (not --benchmark itself)."""
    parser.add_argument("--predictions", required=True,
                        help="folder of official pred.py output: one <dataset>.jsonl per dataset "
                             "with pred, answers, all_classes, length")
    parser.add_argument("--e", action="store_true",
                        help="LongBench-E: score per length bucket (0-4k, 4-8k, 8k+)")
    parser.add_argument("--output_path", default=None,
                        help="folder for result.json and jaxeval's results JSON (default: --predictions)")
    parser.add_argument("--code_sim_backend", choices=BACKENDS, default="difflib",
                        help="lcc/repobench-p similarity: difflib (official) or levenshtein "
                             "(fuzzywuzzy with python-Levenshtein installed)")
    parser.add_argument("--rouge_recursion", choices=tuple(ROUGE_NESTED_CALL_LIMITS), default="python3.11+",
                        help="emulate the official ROUGE's recursion limit of this Python (none: no limit)")


def cmd_score(args: argparse.Namespace) -> int:
    """Score, print the table, write result.json and jaxeval's results; 0 on success.

    User errors raise jaxeval.errors.JaxevalError subclasses, which the CLI prints as one line.
    """
    from jaxeval.benchmarks.longbench.rescore import rescore_predictions
    from jaxeval.benchmarks.longbench.results import format_scores_table

    options = ScoringOptions(code_sim_backend=args.code_sim_backend, rouge_recursion=args.rouge_recursion)
    result = rescore_predictions(args.predictions, e=args.e, output_dir=args.output_path, options=options)
    print(format_scores_table(result))
    check = result["result_json_check"]
    if check is not None:
        if check["identical"]:
            print(f"identical to {check['path']}")
        else:
            print(f"differs from {check['path']}: {', '.join(check['differences']) or 'dataset sets differ'}")
    for what, path in result["written"].items():
        print(f"wrote {what}: {path}")
    return 0
