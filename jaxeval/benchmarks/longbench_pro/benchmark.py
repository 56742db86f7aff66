"""The LongBench Pro part of the CLI: `jaxeval run --tasks longbench_pro` and re-scoring saved
predictions (official harness output or jaxeval's samples) without a model:

    jaxeval score --benchmark longbench_pro --predictions FILE_OR_FOLDER [--output_path DIR]

The hooks are described in jaxeval/benchmarks/registry.py.
"""

from __future__ import annotations

import argparse

from jaxeval.benchmarks.longbench_pro.metrics import DEFAULT_ROUGE_RECURSION, ROUGE_RECURSION_MODELS, ScoringOptions
from jaxeval.benchmarks.longbench_pro.prompts import CHAT_FORMATS
from jaxeval.benchmarks.longbench_pro.semsim import BACKENDS, OFFICIAL_EMBEDDING_MODEL, SemSimSettings
from jaxeval.benchmarks.longbench_pro.tasks import MODEL_TYPES, MODES, RUNS_PER_SAMPLE

VERSION = "1"  # of jaxeval's implementation; bump when a number it reports changes


def _add_scoring_arguments(parser: argparse.ArgumentParser, prefix: str) -> None:
    parser.add_argument(f"--{prefix}embedding_model", default=OFFICIAL_EMBEDDING_MODEL,
                        help="SemSim model for T4: a local folder or a hub id already in the HF cache "
                             "(never downloaded at run time); anything but Qwen3-Embedding-8B is a recorded deviation")
    parser.add_argument(f"--{prefix}semsim_backend", choices=BACKENDS, default="jax",
                        help="jax: jaxeval's Qwen3 embedding path; sentence-transformers: pip install 'jaxeval[semsim]'")
    parser.add_argument(f"--{prefix}embedding_dtype", choices=("float32", "bfloat16"), default="float32")
    parser.add_argument(f"--{prefix}rouge_recursion", choices=tuple(ROUGE_RECURSION_MODELS),
                        default=DEFAULT_ROUGE_RECURSION,
                        help="emulate the official ROUGE-L's recursion limit as the official evaluator meets it "
                             "on this CPython (none: no limit)")


def _scoring(args, prefix: str) -> tuple[SemSimSettings, ScoringOptions]:
    def value(name):
        return getattr(args, prefix + name)

    return (SemSimSettings(model=value("embedding_model"), backend=value("semsim_backend"),
                           dtype=value("embedding_dtype")),
            ScoringOptions(rouge_recursion=value("rouge_recursion")))


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("LongBench Pro")
    group.add_argument("--longbench_pro_data", default=None,
                       help="longbench_pro.json, a folder holding it, or caskcsg/LongBench-Pro (default: embedded sample)")
    group.add_argument("--longbench_pro_mode", choices=MODES, default="nonthinking")
    group.add_argument("--longbench_pro_model_type", choices=MODEL_TYPES, default="Instruct",
                       help="Instruct: thinking mode uses question_thinking; Thinking/Mixed: question_nonthinking "
                            "with native reasoning on (scored text after the last </think>)")
    group.add_argument("--longbench_pro_runs", type=int, default=RUNS_PER_SAMPLE, help="runs per sample (official: 3)")
    group.add_argument("--longbench_pro_truncation_length", type=int, default=None,
                       help="L: prompt tokens kept by the middle cut (official: 120000 for 128k models, "
                            "224000 for 256k; default 120000, or window - output budget for smaller windows)")
    group.add_argument("--longbench_pro_truncation_tokenizer", default="auto",
                       help="auto: Qwen2.5's from the local HF cache, else the model's own (a recorded deviation); "
                            "model; or a folder / hub id")
    group.add_argument("--longbench_pro_max_new_tokens", type=int, default=None,
                       help="output budget (official: 1024 non-thinking, 8192 thinking, 32768 thinking at 256k)")
    group.add_argument("--longbench_pro_temperature", type=float, default=None,
                       help="default: the model's generation_config.json, else 1.0 (official rule)")
    group.add_argument("--longbench_pro_top_p", type=float, default=None)
    group.add_argument("--longbench_pro_chat_format", choices=CHAT_FORMATS, default="auto")
    _add_scoring_arguments(group, "longbench_pro_")


def run_task(model, args) -> tuple[dict, str]:
    from jaxeval.benchmarks.longbench_pro.runner import run_longbench_pro
    from jaxeval.benchmarks.longbench_pro.summary import format_table
    from jaxeval.benchmarks.longbench_pro.tasks import SHIPPED_SAMPLE

    semsim, options = _scoring(args, "longbench_pro_")
    result = run_longbench_pro(
        model, args.longbench_pro_data or SHIPPED_SAMPLE, mode=args.longbench_pro_mode,
        model_type=args.longbench_pro_model_type, runs=args.longbench_pro_runs,
        truncation_length=args.longbench_pro_truncation_length,
        truncation_tokenizer=args.longbench_pro_truncation_tokenizer,
        max_new_tokens=args.longbench_pro_max_new_tokens, temperature=args.longbench_pro_temperature,
        top_p=args.longbench_pro_top_p, seed=getattr(args, "seed", 0) or 0,
        chat_format=args.longbench_pro_chat_format,
        limit=args.limit, batch_size=args.batch_size, semsim=semsim, options=options,
        journal=getattr(args, "journal", None))
    return result, format_table(result["summary"], result["extra"])


TASKS = {"longbench_pro": run_task}


def check(task: str, args) -> None:
    """The flags `run` would reject, checked before anything loads (`run` and `validate`)."""
    from jaxeval.benchmarks.longbench_pro.prompts import PromptSettings
    from jaxeval.benchmarks.longbench_pro.tasks import max_new_tokens_for
    from jaxeval.errors import ConfigError

    budget, length = args.longbench_pro_max_new_tokens, args.longbench_pro_truncation_length
    PromptSettings(mode=args.longbench_pro_mode, model_type=args.longbench_pro_model_type,
                   truncation_length=120_000 if length is None else length,
                   max_new_tokens=budget if budget is not None else max_new_tokens_for(args.longbench_pro_mode),
                   chat_format=args.longbench_pro_chat_format)
    if args.longbench_pro_runs < 1:
        raise ConfigError(f"--longbench_pro_runs must be a positive integer, got {args.longbench_pro_runs}")
    temperature, top_p = args.longbench_pro_temperature, args.longbench_pro_top_p
    if temperature is not None and not temperature >= 0:
        raise ConfigError(f"--longbench_pro_temperature must be >= 0, got {temperature}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ConfigError(f"--longbench_pro_top_p must be in (0, 1], got {top_p}")
    _scoring(args, "longbench_pro_")


def describe() -> dict:
    from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS, SECONDARY_TASKS

    return {"longbench_pro": {"about": "LongBench Pro: 25 bilingual long-context tasks, official metrics and summary",
                              "configs": list(SECONDARY_TASKS), "lengths": list(DIMENSIONS["token_length"])}}


def validate(task: str, args) -> list[str]:
    from jaxeval.benchmarks.longbench_pro.data import load_records
    from jaxeval.benchmarks.longbench_pro.tasks import SHIPPED_SAMPLE

    data = getattr(args, "longbench_pro_data", None) or SHIPPED_SAMPLE
    return [f"{task}: {len(load_records(data))} records valid in {data}"]


def summarize(task: str, result: dict) -> dict:
    """The results-JSON sections of a LongBench Pro result (docs/results_schema.md)."""
    summary, prompting = result["summary"], result["prompting"]
    results = {task: {"score": summary["average_overall_metric"]}}
    groups = {f"{dimension}/{key}": value for dimension in
              ("token_length", "contextual_requirement", "difficulty", "primary_task", "language")
              for key, value in summary[f"average_{dimension}_metric"].items()}
    groups.update({f"secondary_task/{key}": value
                   for key, value in result["extra"]["average_secondary_task_metric"].items()})
    return {"results": results, "groups": groups, "higher_is_better": {task: {"score": True}},
            "n-samples": {task: {"original": None, "effective": summary["total_questions_num"]}},
            "lengths": {task: list(summary["average_token_length_metric"])}, "versions": VERSION,
            "configs": {"scoring": result["scoring"], "limit": prompting["limit"], "data": prompting["data"],
                        "mode": prompting["mode"], "runs": prompting["runs"]},
            "truncation": {"policy": "middle of the whole prompt (official)", "length": prompting["truncation_length"],
                           "tokenizer": prompting["truncation_tokenizer"], "truncated": prompting["truncated"],
                           "window_truncated": prompting["window_truncated"]},
            "chat_template": {"format": prompting["chat_format"]},
            "deviations": result["deviations"]}


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `jaxeval score --benchmark longbench_pro` (not --benchmark itself)."""
    parser.add_argument("--predictions", required=True,
                        help="official inference/evaluation JSONL, a folder of one run's inference shards, "
                             "jaxeval's --log_samples JSONL, or a JSON with a 'samples' list")
    parser.add_argument("--output_path", default=None,
                        help="folder for the outputs (default: a new folder <predictions>_rescored beside them)")
    parser.add_argument("--bon_num", type=int, default=None, help="runs per question (default: the largest bon_idx)")
    _add_scoring_arguments(parser, "")


def cmd_score(args: argparse.Namespace) -> int:
    """Score, print the table, write the evaluation JSONL, summary and results; 0 on success."""
    from jaxeval.benchmarks.longbench_pro.rescore import rescore_predictions
    from jaxeval.benchmarks.longbench_pro.summary import format_table
    from jaxeval.inputs import score_output_folder

    semsim, options = _scoring(args, "")
    result = rescore_predictions(args.predictions, output_dir=score_output_folder(args.predictions, args.output_path),
                                 bon_num=args.bon_num, semsim=semsim, options=options)
    print(format_table(result["summary"], result["extra"]))
    check = result["check"]
    if check is not None:
        print(f"compared with the file's metric: {check['compared']} rows, {check['differing']} differ by more than "
              f"{check['tolerance']} (max {check['max_abs_difference']:.3g})")
    for deviation in result["deviations"]:
        print(f"deviation: {deviation}")
    for what, path in result["written"].items():
        print(f"wrote {what}: {path}")
    return 0
