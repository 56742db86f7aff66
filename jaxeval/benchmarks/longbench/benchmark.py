"""LongBench v1 and LongBench-E as a jaxeval Benchmark: `jaxeval run --tasks longbench,longbench_e`
and re-scoring official pred.py output without a model:

    jaxeval score --benchmark longbench --predictions pred/<model> [--e] [--output_path DIR]
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.longbench.metrics import (
    DEFAULT_ROUGE_RECURSION, ROUGE_RECURSION_ALIASES, ROUGE_RECURSION_MODELS, ScoringOptions,
)
from jaxeval.benchmarks.settings import setting
from jaxeval.generation import require_tokenizer
from jaxeval.metrics.edit_similarity import BACKENDS
from jaxeval.benchmarks.longbench.tasks import HUB_ID


@dataclasses.dataclass(frozen=True)
class LongBenchSettings:
    data: str | None = setting(None, "LongBench JSONL folder or the hub id THUDM/LongBench (default: the "
                                      "stand-in sample shipped with jaxeval, a few items per dataset)")
    datasets: str | None = setting(None, "comma-separated v1 dataset names, e.g. hotpotqa,trec (default: all of the "
                                         "task's: 21, LongBench-E 13)")


def _stderrs(result: dict, dataset: str, e: bool) -> dict:
    """score_stderr (LongBench-E: score_<bucket>_stderr) from the per-sample scores, in percent."""
    from jaxeval.benchmarks.longbench.scoring import bucket_sample_scores
    from jaxeval.run.lm_eval_view import stderr

    per_sample = result.get("sample_scores", {}).get(dataset)
    if per_sample is None:
        return {}
    if not e:
        return {"score_stderr": stderr(per_sample, 100.0)}
    lengths = [output.get("length") for output in result.get("outputs", {}).get(dataset, [])]
    if len(lengths) != len(per_sample) or any(length is None for length in lengths):
        return {}
    return {f"score_{bucket}_stderr": stderr(values, 100.0)
            for bucket, values in bucket_sample_scores(per_sample, lengths).items()}


@dataclasses.dataclass(frozen=True)
class LongBenchScoreOptions:
    """The flags of `jaxeval score --benchmark longbench`."""
    predictions: str = setting("", "folder of official pred.py output: one <dataset>.jsonl per dataset with pred, "
                               "answers, all_classes, length", required=True)
    e: bool = setting(False, "LongBench-E: score per length bucket (0-4k, 4-8k, 8k+)")
    output_path: str | None = setting(None, "folder for result.json and jaxeval's results JSON (default: a new folder "
                                      "<predictions>_rescored beside them; no file among the predictions is rewritten)")
    code_sim_backend: str = setting("difflib", "lcc/repobench-p similarity: difflib (official) or levenshtein "
                                    "(fuzzywuzzy with python-Levenshtein installed)", choices=BACKENDS)
    rouge_recursion: str = setting(DEFAULT_ROUGE_RECURSION, "emulate the official ROUGE-L's recursion limit as the "
                                   "official eval.py meets it on this CPython (none: no limit; python3.11+ is an old "
                                   "name for python3.11)", choices=(*ROUGE_RECURSION_MODELS, *ROUGE_RECURSION_ALIASES))


class LongBench(Benchmark):
    ScoreOptions = LongBenchScoreOptions
    name = "longbench"
    hub_id = HUB_ID
    tasks = ("longbench", "longbench_e")
    Settings = LongBenchSettings

    def describe(self) -> dict:
        """`jaxeval ls`: task -> what it is, its datasets and length buckets."""
        from jaxeval.benchmarks.longbench.tasks import BUCKETS, DATASETS, E_DATASETS

        return {"longbench": {"about": "LongBench v1: 21 datasets, generation, official metrics",
                              "configs": list(DATASETS), "lengths": ["up to the model window (middle truncation)"]},
                "longbench_e": {"about": "LongBench-E: 13 datasets scored per length bucket",
                                "configs": list(E_DATASETS), "lengths": list(BUCKETS)}}

    def validate(self, task: str, settings: LongBenchSettings) -> list[str]:
        """Parse and check every record of the task's datasets (DataError if not)."""
        from jaxeval.benchmarks.longbench.data import load_config
        from jaxeval.benchmarks.longbench.tasks import DATASETS, E_DATASETS, SHIPPED_SAMPLE, check_datasets, config_name

        e = task == "longbench_e"
        data = settings.data or SHIPPED_SAMPLE
        chosen = check_datasets(settings.datasets, e) if settings.datasets else (E_DATASETS if e else DATASETS)
        return [f"{task} {name}: {len(load_config(data, config_name(name, e)))} records valid" for name in chosen]

    def samples(self, ctx: RunContext, settings: LongBenchSettings):
        from jaxeval.benchmarks.longbench.runner import LongBenchTask

        kwargs = {"data": settings.data} if settings.data else {}
        if settings.datasets:
            kwargs["datasets"] = settings.datasets
        return LongBenchTask(ctx.model, require_tokenizer(ctx.model, "LongBench"), e=ctx.task == "longbench_e",
                             limit=ctx.limit, log_prompts=ctx.log_prompts, sample_log=True, **kwargs)

    def summarize(self, task: str, result: dict) -> dict:
        """The results-JSON sections of a LongBench or LongBench-E result (docs/results_schema.md)."""
        e = task == "longbench_e"
        results, n_samples, lengths = {}, {}, {}
        for dataset, score in result["scores"].items():
            leaf = f"{task}/{dataset}"
            results[leaf] = {f"score_{bucket}": value for bucket, value in score.items()} if e else {"score": score}
            results[leaf].update(_stderrs(result, dataset, e))
            samples = result["samples"][dataset]
            n_samples[leaf] = {"original": result.get("records_before_limit", {}).get(dataset),
                               "effective": sum(samples.values()) if e else samples}
            lengths[leaf] = list(score) if e else None
        groups = ({f"average_{bucket}": value for bucket, value in result["bucket_averages"].items()} if e else
                  {f"{table}/{category}": value for table, categories in result["categories"].items()
                   for category, value in categories.items()})
        prompting = result["prompting"]
        return {"results": results, "groups": groups, "n-samples": n_samples, "lengths": lengths,
                "higher_is_better": {leaf: {metric: True for metric in metrics} for leaf, metrics in results.items()},
                "versions": self.version, "configs": {"scoring": result["scoring"], "limit": prompting["limit"],
                                                 "data": prompting["data"]},
                "truncation": {"policy": "middle (official pred.py)", "max_length": prompting["max_length"],
                               "max_length_source": prompting["max_length_source"],
                               "truncated": prompting["truncated"]},
                "chat_template": {"format": prompting["chat_format"],
                                  "skipped_for": prompting["chat_template_skipped_for"]},
                "deviations": []}

    def planned_units(self, task: str, settings: LongBenchSettings, tokenizer):
        from jaxeval.benchmarks.longbench.tasks import planned_units

        return planned_units(settings.data, settings.datasets, task == "longbench_e")

    def report_view(self, task: str):
        from jaxeval.benchmarks.longbench.report_view import longbench_e_view, longbench_view

        return longbench_e_view if task == "longbench_e" else longbench_view

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.benchmarks.longbench.sample_scores import longbench_sample_scores

        return longbench_sample_scores(task, section, samples)

    def rescore(self, score: LongBenchScoreOptions) -> int:
        """Score, print the table, write result.json and jaxeval's results; 0 on success.

        User errors raise jaxeval.errors.JaxevalError subclasses, which the CLI prints as one line.
        """
        from jaxeval.benchmarks.longbench.rescore import rescore_predictions
        from jaxeval.benchmarks.longbench.results import format_scores_table
        from jaxeval.io.outputs import score_output_folder

        options = ScoringOptions(code_sim_backend=score.code_sim_backend, rouge_recursion=score.rouge_recursion)
        result = rescore_predictions(score.predictions, e=score.e, options=options,
                                     output_dir=score_output_folder(score.predictions, score.output_path))
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


BENCHMARK = LongBench()
