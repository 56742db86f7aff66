"""LongBench v2 as a jaxeval Benchmark: `jaxeval run --tasks longbench_v2[,longbench_v2_loglik]` and
re-scoring pred.py's result files without a model:

    jaxeval score --benchmark longbench_v2 --predictions FILE.jsonl [--compensated] [--output_path DIR]
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.settings import setting
from jaxeval.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class LongBenchV2Settings:
    data: str | None = setting(None, "THUDM/LongBench-v2 (the hub, online), data.json, a JSONL file or a folder "
                                     "(default: the embedded stand-in sample)")
    cot: bool = setting(False, "the chain-of-thought variant (pred.py --cot: a 1,024-token thought, then the answer)")
    max_len: int | None = setting(None, "prompt tokens kept by the middle cut (pred.py: 120000; default: that, or "
                                        "what the window leaves)")
    temperature: float = setting(0.1, "sampling temperature (pred.py: 0.1)")
    chat_format: str = setting("auto", "model: the tokenizer's chat template (as pred.py's chat call); none: the raw "
                                       "prompt; auto: model when the tokenizer has one", choices=("auto", "model", "none"))


@dataclasses.dataclass(frozen=True)
class LongBenchV2ScoreOptions:
    """The flags of `jaxeval score --benchmark longbench_v2`."""
    predictions: str = setting("", "pred.py's result JSONL (or a JSON array): _id, difficulty, length, answer, "
                               "response; pred and judge are recomputed", required=True)
    compensated: bool = setting(False, "result.py's compensated switch: 0.25 for a row with no extracted answer "
                                "(off there)")
    output_path: str | None = setting(None, "folder for result.txt and longbench_v2_result.json (default: "
                                      "<predictions>_rescored)")


class LongBenchV2(Benchmark):
    ScoreOptions = LongBenchV2ScoreOptions
    name = "longbench_v2"
    tasks = ("longbench_v2", "longbench_v2_loglik")
    Settings = LongBenchV2Settings

    def check(self, task: str, settings: LongBenchV2Settings, ctx: RunContext) -> None:
        if settings.max_len is not None and settings.max_len < 2:
            raise ConfigError(f"--longbench_v2_max_len must be at least 2, got {settings.max_len}")
        if not settings.temperature >= 0:
            raise ConfigError(f"--longbench_v2_temperature must be >= 0, got {settings.temperature}")

    def describe(self) -> dict:
        lengths = ["short", "medium", "long"]
        return {"longbench_v2": {"about": "LongBench v2: 503 four-choice questions, pred.py's protocol (--longbench_v2_cot "
                                          "for CoT), result.py's table", "configs": ["easy", "hard"], "lengths": lengths},
                "longbench_v2_loglik": {"about": "LongBench v2 by log-likelihood over A-D (a diagnostic, not the "
                                                 "official score)", "configs": ["easy", "hard"], "lengths": lengths}}

    def validate(self, task: str, settings: LongBenchV2Settings) -> list[str]:
        from jaxeval.benchmarks.longbench_v2.data import SHIPPED_SAMPLE, load_items

        data = settings.data or SHIPPED_SAMPLE
        return [f"{task}: {len(load_items(data))} items valid in {data}"]

    @staticmethod
    def variant(task: str, settings: LongBenchV2Settings) -> str:
        return "loglik" if task == "longbench_v2_loglik" else ("cot" if settings.cot else "0shot")

    def samples(self, ctx: RunContext, settings: LongBenchV2Settings):
        from jaxeval.benchmarks.longbench_v2.data import SHIPPED_SAMPLE
        from jaxeval.benchmarks.longbench_v2.runner import LongBenchV2Task

        return LongBenchV2Task(ctx.model, settings.data or SHIPPED_SAMPLE, variant=self.variant(ctx.task, settings),
                               max_len=settings.max_len, chat_format=settings.chat_format,
                               temperature=settings.temperature, seed=ctx.seed or 0, limit=ctx.limit,
                               log_prompts=ctx.log_prompts)

    def summarize(self, task: str, result: dict) -> dict:
        table, prompting = result["table"], result["prompting"]
        results = {task: {"score": table["overall"]}, **{f"{task}/{c}": {"score": table[c]}
                                                         for c in ("easy", "hard", "short", "medium", "long")}}
        return {"results": results, "versions": self.version,
                "lengths": {task: ["short", "medium", "long"]},
                "n-samples": {task: {"original": result.get("records_before_limit"), "effective": table["counts"]["overall"]}},
                "higher_is_better": {leaf: {"score": True} for leaf in results},
                "configs": {k: prompting[k] for k in ("data", "stand_in_sample", "variant", "temperature", "seed", "limit")},
                "truncation": {"policy": "middle (pred.py)", "max_len": prompting["max_len"],
                               "truncated": prompting["truncated"], "window_truncated": prompting["window_truncated"]},
                "chat_template": {"format": prompting["chat_format"]}, "deviations": result["deviations"]}

    def report_view(self, task: str):
        from jaxeval.benchmarks.longbench_v2.report_view import view_for

        return view_for(task)

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.report.paired import SampleScore

        rows = (section or {}).get("samples") or samples
        if not rows:
            return None
        return [SampleScore(row["key"], row["difficulty"], row["length"], 100.0 * bool(row["judge"])) for row in rows]

    def rescore(self, score: LongBenchV2ScoreOptions) -> int:
        from jaxeval.benchmarks.longbench_v2.rescore import rescore_predictions
        from jaxeval.benchmarks.longbench_v2.scoring import format_table
        from jaxeval.io.outputs import score_output_folder

        result = rescore_predictions(score.predictions, score.compensated,
                                     score_output_folder(score.predictions, score.output_path))
        print(format_table(result["table"], "LongBench v2"))
        check = result["judge_check"]
        if check["compared"]:
            print(f"recomputed judge: {check['differing']} of {check['compared']} rows differ from the file's")
        for what, path in result["written"].items():
            print(f"wrote {what}: {path}")
        return 0


BENCHMARK = LongBenchV2()
