"""LongBench Pro as a jaxeval Benchmark: `jaxeval run --tasks longbench_pro` and re-scoring saved
predictions (official harness output or jaxeval's samples) without a model:

    jaxeval score --benchmark longbench_pro --predictions FILE_OR_FOLDER [--output_path DIR]
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.longbench_pro.metrics import DEFAULT_ROUGE_RECURSION, ROUGE_RECURSION_MODELS, ScoringOptions
from jaxeval.benchmarks.longbench_pro.prompts import CHAT_FORMATS
from jaxeval.benchmarks.longbench_pro.semsim import BACKENDS, OFFICIAL_EMBEDDING_MODEL, SemSimSettings
from jaxeval.benchmarks.longbench_pro.tasks import MODEL_TYPES, MODES, RUNS_PER_SAMPLE
from jaxeval.benchmarks.settings import setting
from jaxeval.errors import ConfigError
from jaxeval.benchmarks.longbench_pro.tasks import HUB_ID

EMBEDDING_HELP = ("SemSim model for T4: a local folder or a hub id already in the HF cache (never downloaded at run "
                  "time); anything but Qwen3-Embedding-8B is a recorded deviation")
SEMSIM_HELP = "jax: jaxeval's Qwen3 embedding path; sentence-transformers: pip install 'jaxeval[semsim]'"
ROUGE_HELP = ("emulate the official ROUGE-L's recursion limit as the official evaluator meets it on this CPython "
              "(none: no limit)")
EMBEDDING_DTYPES = ("float32", "bfloat16")


@dataclasses.dataclass(frozen=True)
class LongBenchProSettings:
    data: str | None = setting(None, "longbench_pro.json, a folder holding it, or caskcsg/LongBench-Pro "
                                     "(default: embedded sample)")
    mode: str = setting("nonthinking", choices=MODES)
    model_type: str = setting("Instruct", "Instruct: thinking mode uses question_thinking; Thinking/Mixed: "
                                          "question_nonthinking with native reasoning on (scored text after the "
                                          "last </think>)", choices=MODEL_TYPES)
    runs: int = setting(RUNS_PER_SAMPLE, "runs per sample (official: 3)")
    truncation_length: int | None = setting(None, "L: prompt tokens kept by the middle cut (official: 120000 for "
                                                  "128k models, 224000 for 256k; default 120000, or window - output "
                                                  "budget for smaller windows)")
    truncation_tokenizer: str = setting("auto", "auto: Qwen2.5's from the local HF cache, else the model's own (a "
                                                "recorded deviation); model; or a folder / hub id")
    max_new_tokens: int | None = setting(None, "output budget (official: 1024 non-thinking, 8192 thinking, 32768 "
                                               "thinking at 256k)")
    temperature: float | None = setting(None, "default: the model's generation_config.json, else 1.0 (official rule)")
    top_p: float | None = setting(None)
    chat_format: str = setting("auto", choices=CHAT_FORMATS)
    embedding_model: str = setting(OFFICIAL_EMBEDDING_MODEL, EMBEDDING_HELP)
    semsim_backend: str = setting("jax", SEMSIM_HELP, choices=BACKENDS)
    embedding_dtype: str = setting("float32", choices=EMBEDDING_DTYPES)
    rouge_recursion: str = setting(DEFAULT_ROUGE_RECURSION, ROUGE_HELP, choices=tuple(ROUGE_RECURSION_MODELS))


def _score_stderr(result: dict) -> float | None:
    """The standard error of `score` (the mean over questions of each question's mean over its
    runs), from the scored rows; None without them or below two questions."""
    from jaxeval.benchmarks.longbench_pro.summary import question_means
    from jaxeval.run.lm_eval_view import stderr

    rows = result.get("samples")
    if not rows:
        return None
    questions, _ = question_means(rows, result["prompting"]["runs"])
    return stderr([question["metric"] for question in questions])


def scoring(embedding_model: str, backend: str, dtype: str, rouge_recursion: str) -> tuple[SemSimSettings,
                                                                                            ScoringOptions]:
    return (SemSimSettings(model=embedding_model, backend=backend, dtype=dtype),
            ScoringOptions(rouge_recursion=rouge_recursion))


@dataclasses.dataclass(frozen=True)
class LongBenchProScoreOptions:
    """The flags of `jaxeval score --benchmark longbench_pro`."""
    predictions: str = setting("", "official inference/evaluation JSONL, a folder of one run's inference shards, "
                               "jaxeval's --log_samples JSONL, or a JSON with a 'samples' list", required=True)
    output_path: str | None = setting(None, "folder for the outputs (default: a new folder <predictions>_rescored "
                                      "beside them)")
    bon_num: int | None = setting(None, "runs per question (default: the largest bon_idx)")
    embedding_model: str = setting(OFFICIAL_EMBEDDING_MODEL, EMBEDDING_HELP)
    semsim_backend: str = setting("jax", SEMSIM_HELP, choices=BACKENDS)
    embedding_dtype: str = setting("float32", "", choices=EMBEDDING_DTYPES)
    rouge_recursion: str = setting(DEFAULT_ROUGE_RECURSION, ROUGE_HELP, choices=tuple(ROUGE_RECURSION_MODELS))


class LongBenchPro(Benchmark):
    ScoreOptions = LongBenchProScoreOptions
    name = "longbench_pro"
    hub_id = HUB_ID
    tasks = ("longbench_pro",)
    Settings = LongBenchProSettings

    def check(self, task: str, settings: LongBenchProSettings, ctx: RunContext) -> None:
        """The settings `run` would reject, checked before anything loads (`run` and `validate`)."""
        from jaxeval.benchmarks.longbench_pro.prompts import PromptSettings
        from jaxeval.benchmarks.longbench_pro.tasks import max_new_tokens_for

        budget, length = settings.max_new_tokens, settings.truncation_length
        PromptSettings(mode=settings.mode, model_type=settings.model_type,
                       truncation_length=120_000 if length is None else length,
                       max_new_tokens=budget if budget is not None else max_new_tokens_for(settings.mode),
                       chat_format=settings.chat_format)
        if settings.runs < 1:
            raise ConfigError(f"--longbench_pro_runs must be a positive integer, got {settings.runs}")
        temperature, top_p = settings.temperature, settings.top_p
        if temperature is not None and not temperature >= 0:
            raise ConfigError(f"--longbench_pro_temperature must be >= 0, got {temperature}")
        if top_p is not None and not 0 < top_p <= 1:
            raise ConfigError(f"--longbench_pro_top_p must be in (0, 1], got {top_p}")
        self._scoring(settings)

    @staticmethod
    def _scoring(settings: LongBenchProSettings):
        return scoring(settings.embedding_model, settings.semsim_backend, settings.embedding_dtype,
                       settings.rouge_recursion)

    def samples(self, ctx: RunContext, settings: LongBenchProSettings):
        from jaxeval.benchmarks.longbench_pro.runner import LongBenchProTask
        from jaxeval.benchmarks.longbench_pro.tasks import SHIPPED_SAMPLE

        semsim, options = self._scoring(settings)
        return LongBenchProTask(
            ctx.model, settings.data or SHIPPED_SAMPLE, mode=settings.mode, model_type=settings.model_type,
            runs=settings.runs, truncation_length=settings.truncation_length,
            truncation_tokenizer=settings.truncation_tokenizer, max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature, top_p=settings.top_p, seed=ctx.seed or 0,
            chat_format=settings.chat_format, limit=ctx.limit, semsim=semsim, options=options,
            log_prompts=ctx.log_prompts)

    def describe(self) -> dict:
        from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS, SECONDARY_TASKS

        return {"longbench_pro": {"about": "LongBench Pro: 25 bilingual long-context tasks, official metrics and summary",
                                  "configs": list(SECONDARY_TASKS), "lengths": list(DIMENSIONS["token_length"])}}

    def validate(self, task: str, settings: LongBenchProSettings) -> list[str]:
        from jaxeval.benchmarks.longbench_pro.data import load_records
        from jaxeval.benchmarks.longbench_pro.tasks import SHIPPED_SAMPLE

        data = settings.data or SHIPPED_SAMPLE
        return [f"{task}: {len(load_records(data))} records valid in {data}"]

    def summarize(self, task: str, result: dict) -> dict:
        """The results-JSON sections of a LongBench Pro result (docs/results_schema.md)."""
        summary, prompting = result["summary"], result["prompting"]
        results = {task: {"score": summary["average_overall_metric"], "score_stderr": _score_stderr(result)}}
        groups = {f"{dimension}/{key}": value for dimension in
                  ("token_length", "contextual_requirement", "difficulty", "primary_task", "language")
                  for key, value in summary[f"average_{dimension}_metric"].items()}
        groups.update({f"secondary_task/{key}": value
                       for key, value in result["extra"]["average_secondary_task_metric"].items()})
        return {"results": results, "groups": groups, "higher_is_better": {task: {"score": True}},
                "n-samples": {task: {"original": result.get("records_before_limit"),
                                     "effective": summary["total_questions_num"]}},
                "lengths": {task: list(summary["average_token_length_metric"])}, "versions": self.version,
                "configs": {"scoring": result["scoring"], "limit": prompting["limit"], "data": prompting["data"],
                            "mode": prompting["mode"], "runs": prompting["runs"]},
                "truncation": {"policy": "middle of the whole prompt (official)", "length": prompting["truncation_length"],
                               "tokenizer": prompting["truncation_tokenizer"], "truncated": prompting["truncated"],
                               "window_truncated": prompting["window_truncated"]},
                "chat_template": {"format": prompting["chat_format"]},
                "deviations": result["deviations"]}

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.benchmarks.longbench_pro.sample_scores import longbench_pro_sample_scores

        return longbench_pro_sample_scores(task, section, samples)

    def rescore(self, score: LongBenchProScoreOptions) -> int:
        """Score, print the table, write the evaluation JSONL, summary and results; 0 on success."""
        from jaxeval.benchmarks.longbench_pro.rescore import rescore_predictions
        from jaxeval.benchmarks.longbench_pro.summary import format_table
        from jaxeval.io.outputs import score_output_folder

        semsim, options = scoring(score.embedding_model, score.semsim_backend, score.embedding_dtype, score.rouge_recursion)
        result = rescore_predictions(score.predictions, output_dir=score_output_folder(score.predictions, score.output_path),
                                     bon_num=score.bon_num, semsim=semsim, options=options)
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


BENCHMARK = LongBenchPro()
