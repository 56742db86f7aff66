"""OpenAI-MRCR as a jaxeval Benchmark: `jaxeval run --tasks mrcr` and re-grading saved responses:

    jaxeval score --benchmark mrcr --predictions FILE.jsonl [--tokenizer PATH] [--output_path DIR]
"""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.settings import setting
from jaxeval.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class MrcrSettings:
    data: str | None = setting(None, "openai/mrcr (the hub, online), a folder in its layout (2needle/*.parquet ...) "
                                     "or a .parquet/.jsonl file (default: the embedded stand-in sample)")
    needles: str = setting("2,4,8", "needle counts to run: any of 2,4,8")
    max_new_tokens: int | None = setting(None, "output budget per item (default: the answer's tokens + 64)")
    bin_tokenizer: str = setting("auto", "auto: tiktoken o200k_base (the card's) where it loads, else the model's; "
                                         "o200k_base: require it; model", choices=("auto", "o200k_base", "model"))


def parse_needles(text: str) -> tuple[int, ...]:
    from jaxeval.benchmarks.mrcr.data import NEEDLES

    try:
        chosen = tuple(sorted({int(part) for part in str(text).split(",") if part.strip()}))
    except ValueError:
        chosen = ()
    if not chosen or any(n not in NEEDLES for n in chosen):
        raise ConfigError(f"--mrcr_needles must list needle counts out of 2,4,8, got {text!r}")
    return chosen


@dataclasses.dataclass(frozen=True)
class MrcrScoreOptions:
    """The flags of `jaxeval score --benchmark mrcr`."""
    predictions: str = setting("", "JSONL: rows with the dataset's fields (prompt, answer, random_string_to_prepend, "
                               "n_needles, ...) plus response; jaxeval's --log_samples rows too", required=True)
    tokenizer: str | None = setting(None, "tokenizer for the bins when tiktoken's o200k_base is not available")
    output_path: str | None = setting(None, "folder for mrcr_scores.json (default: a new folder <predictions>_rescored "
                                      "beside them)")


class Mrcr(Benchmark):
    ScoreOptions = MrcrScoreOptions
    name = "mrcr"
    tasks = ("mrcr",)
    Settings = MrcrSettings

    def check(self, task: str, settings: MrcrSettings, ctx: RunContext) -> None:
        parse_needles(settings.needles)
        if settings.max_new_tokens is not None and settings.max_new_tokens < 1:
            raise ConfigError(f"--mrcr_max_new_tokens must be a positive integer, got {settings.max_new_tokens}")

    def check_chat_template(self, task: str, settings, has_template: bool, model_path: str) -> None:
        if not has_template:
            raise ConfigError(f"{model_path}: the tokenizer has no chat template, and MRCR prompts are multi-turn "
                              "conversations; add a chat template to the model folder")

    def describe(self) -> dict:
        from jaxeval.benchmarks.mrcr.grading import BIN_LABELS

        return {"mrcr": {"about": "OpenAI-MRCR: 2/4/8-needle multi-round co-reference, the card's grader and bins",
                         "configs": ["2needle", "4needle", "8needle"], "lengths": list(BIN_LABELS)}}

    def validate(self, task: str, settings: MrcrSettings) -> list[str]:
        from jaxeval.benchmarks.mrcr.data import SHIPPED_SAMPLE, load_rows

        data = settings.data or SHIPPED_SAMPLE
        return [f"{task}: {len(load_rows(data, parse_needles(settings.needles)))} rows valid in {data}"]

    def samples(self, ctx: RunContext, settings: MrcrSettings):
        from jaxeval.benchmarks.mrcr.data import SHIPPED_SAMPLE
        from jaxeval.benchmarks.mrcr.runner import MrcrTask

        return MrcrTask(ctx.model, settings.data or SHIPPED_SAMPLE, needles=parse_needles(settings.needles),
                        max_new_tokens=settings.max_new_tokens, bin_tokenizer=settings.bin_tokenizer,
                        limit=ctx.limit, log_prompts=ctx.log_prompts)

    def summarize(self, task: str, result: dict) -> dict:
        summary, prompting = result["summary"], result["prompting"]
        results = {"mrcr": {"score": summary["score"]}}
        lengths = {"mrcr": None}
        n_samples = {"mrcr": {"original": result.get("records_before_limit"), "effective": summary["graded"]}}
        for name, cell in summary["needles"].items():
            leaf = f"mrcr/{name}"
            results[leaf] = {"score": cell["score"], **{f"score_{b}": c["score"] for b, c in cell["bins"].items()}}
            lengths[leaf] = list(cell["bins"])
            n_samples[leaf] = {"original": None, "effective": cell["graded"], "skipped": cell["skipped"]}
        return {"results": results, "lengths": lengths, "n-samples": n_samples, "versions": self.version,
                "higher_is_better": {leaf: {m: True for m in metrics} for leaf, metrics in results.items()},
                "configs": {"data": prompting["data"], "stand_in_sample": prompting["stand_in_sample"],
                            "bin_tokenizer": prompting["bin_tokenizer"], "max_new_tokens": prompting["max_new_tokens"],
                            "limit": prompting["limit"]},
                "truncation": {"policy": "none: an item longer than the window is skipped and counted",
                               "skipped": summary["skipped"]},
                "chat_template": {"format": "model"}, "deviations": result["deviations"]}

    def report_view(self, task: str):
        from jaxeval.benchmarks.mrcr.report_view import mrcr_view

        return mrcr_view

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.report.paired import SampleScore

        rows = (section or {}).get("samples") or samples
        if not rows:
            return None
        return [SampleScore(row["key"], f"{row['n_needles']}needle", row.get("bin"), 100.0 * row["score"])
                for row in rows if not row.get("skipped") and row.get("score") is not None]  # x100, as the report

    def rescore(self, score: MrcrScoreOptions) -> int:
        from jaxeval.benchmarks.mrcr.rescore import rescore_predictions
        from jaxeval.benchmarks.mrcr.summary import format_table
        from jaxeval.io.outputs import score_output_folder

        result = rescore_predictions(score.predictions, score.tokenizer,
                                     score_output_folder(score.predictions, score.output_path))
        print(format_table(result["summary"], result["bin_tokenizer"]))
        for what, path in result["written"].items():
            print(f"wrote {what}: {path}")
        return 0


BENCHMARK = Mrcr()
