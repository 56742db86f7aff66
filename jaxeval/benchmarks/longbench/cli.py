"""The LongBench part of `jaxeval score`: re-score official pred.py output without a model.

    jaxeval score --benchmark longbench --predictions pred/<model> [--e] [--output_path DIR]

jaxeval/cli.py owns the `score` sub-command and its --benchmark flag; it calls
add_score_arguments(parser) to add these flags and cmd_score_longbench(args) to run.
"""

from __future__ import annotations

import argparse

from jaxeval.benchmarks.longbench.metrics import ROUGE_NESTED_CALL_LIMITS, ScoringOptions
from jaxeval.metrics.edit_similarity import BACKENDS


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


def cmd_score_longbench(args: argparse.Namespace) -> int:
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
