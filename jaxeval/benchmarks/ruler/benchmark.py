"""RULER as a jaxeval Benchmark: `jaxeval run --tasks ruler --ruler_lengths 4096,131072` and

    jaxeval score --benchmark ruler --predictions PRED_DIR_OR_FILE [--output_path DIR]

which re-scores RULER's own prediction JSONL (call_api.py's rows) as its evaluate.py does."""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.base import Benchmark, RunContext, check_limit
from jaxeval.benchmarks.ruler import summary
from jaxeval.benchmarks.ruler.tasks import DEFAULT_SAMPLES, DEFAULT_SEED, TEMPLATE_CHOICES
from jaxeval.benchmarks.settings import setting
from jaxeval.errors import ConfigError
from jaxeval.generation import require_tokenizer


@dataclasses.dataclass(frozen=True)
class RulerSettings:
    lengths: str = setting("4096", "comma-separated lengths in tokens (prompt + generated), e.g. 4096,131072 "
                                   "or 4k,128k; a length beyond the model's window is a counted skip")
    subtasks: str | None = setting(None, "comma-separated RULER tasks (default: all 13)")
    num_samples: int = setting(DEFAULT_SAMPLES, "samples per task and length (RULER's 500; --limit takes the first N)")
    seed: int = setting(DEFAULT_SEED, "generator seed (RULER's random_seed, 42)")
    template: str = setting("auto", "prompt wrapper: auto (the tokenizer's chat template if it has one, else base), "
                                    "chat, base, or a RULER template name (meta-llama3, Phi3, ...)",
                            choices=TEMPLATE_CHOICES)
    essay: str | None = setting(None, "RULER's PaulGrahamEssays.json (default: shipped public-domain stand-in)")
    squad: str | None = setting(None, "SQuAD v2.0 dev JSON for qa_1 (default: shipped synthetic stand-in)")
    hotpotqa: str | None = setting(None, "HotpotQA dev distractor JSON for qa_2 (default: shipped synthetic stand-in)")
    english_words: str | None = setting(None, "RULER's english_words.json for cwe once a sample needs more "
                                                  "distinct words than wonderwords has (default: shipped stand-in)")
    teacher_forced: bool = setting(False, "fast diagnostic: log-probability of the gold answer after the answer "
                                          "prefix instead of generating; NOT the official RULER score")
    cache_dir: str | None = setting(None, "sample cache folder (default: $JAXEVAL_RULER_CACHE or "
                                          "~/.cache/jaxeval/ruler)", hashed=False)
    no_cache: bool = setting(False, "generate the samples without reading or writing the cache", hashed=False)


def _check(settings: RulerSettings) -> tuple[list[str], list[int]]:
    from jaxeval.benchmarks.ruler.tasks import parse_lengths, parse_tasks

    if settings.num_samples < 1:
        raise ConfigError(f"--ruler_num_samples must be >= 1, got {settings.num_samples}")
    return parse_tasks(settings.subtasks), parse_lengths(settings.lengths)


def _data(settings: RulerSettings, tasks: list[str]) -> tuple[dict, dict]:
    """(paths the generators read, what the results say about each), every named file checked."""
    from jaxeval.benchmarks.ruler.inputs import source
    from jaxeval.benchmarks.ruler.tasks import TASKS

    needed = {"essay"} if any(TASKS[t][1].get("type_haystack") == "essay" for t in tasks) else set()
    needed |= {TASKS[t][1]["dataset"] for t in tasks if TASKS[t][0] == "qa"}
    needed |= {"english_words"} if "cwe" in tasks else set()
    described = {kind: source(kind, getattr(settings, kind)) for kind in sorted(needed)}
    files = {kind: d["path"] for kind, d in described.items()}
    files.setdefault("english_words", settings.english_words)
    return files, described


@dataclasses.dataclass(frozen=True)
class RulerScoreOptions:
    """The flags of `jaxeval score --benchmark ruler`."""
    predictions: str = setting("", "RULER prediction JSONL: one <task>.jsonl, a pred folder of them, or a folder of "
                               "<length>/pred folders (results/<model>/synthetic)", required=True)
    output_path: str | None = setting(None, "folder for ruler_rescored.json (default: a new folder "
                                      "<predictions>_rescored beside them; nothing among the predictions is written)")


class Ruler(Benchmark):
    ScoreOptions = RulerScoreOptions
    name = "ruler"
    tasks = ("ruler",)
    Settings = RulerSettings
    version = summary.VERSION

    def describe(self) -> dict:
        return summary.describe()

    def check(self, task: str, settings: RulerSettings, ctx: RunContext) -> None:
        tasks, _ = _check(settings)
        check_limit(ctx.limit)
        _data(settings, tasks)

    def check_chat_template(self, task: str, settings: RulerSettings, has_template: bool, model_path: str) -> None:
        if settings.template == "chat" and not has_template:
            raise ConfigError(f"{model_path}: --ruler_template chat, but the tokenizer has no chat template; "
                              "use --ruler_template base (or auto) or a RULER template name")

    def validate(self, task: str, settings: RulerSettings) -> list[str]:
        tasks, lengths = _check(settings)
        _, described = _data(settings, tasks)
        lines = [f"ruler: {len(tasks)} tasks at {', '.join(map(str, lengths))} tokens, seed {settings.seed}"]
        lines += [f"ruler {kind}: {d['path']} ({d['about']}, sha256 {d['sha256'][:12]})" for kind, d in described.items()]
        return lines

    def samples(self, ctx: RunContext, settings: RulerSettings):
        from pathlib import Path

        from jaxeval.benchmarks.ruler.runner import RulerRun, RulerTask
        from jaxeval.benchmarks.ruler.samples import default_cache_dir, resolve_template

        tasks, lengths = _check(settings)
        files, described = _data(settings, tasks)
        tokenizer = require_tokenizer(ctx.model, "RULER")
        template_name, model_template = resolve_template(settings.template, tokenizer)
        cache = None if settings.no_cache else Path(settings.cache_dir).expanduser() if settings.cache_dir \
            else default_cache_dir()
        run = RulerRun(tuple(tasks), tuple(lengths), settings.seed, settings.num_samples, template_name,
                       model_template, files, cache, settings.teacher_forced, described)
        return RulerTask(ctx.model, run, limit=ctx.limit, log_prompts=ctx.log_prompts)

    def summarize(self, task: str, result: dict) -> dict:
        return summary.summarize(result)

    def report_view(self, task: str):
        from jaxeval.benchmarks.ruler.report_view import ruler_view

        return ruler_view

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.benchmarks.ruler.sample_scores import ruler_sample_scores

        return ruler_sample_scores(section, samples)

    def rescore(self, score: RulerScoreOptions) -> int:
        from pathlib import Path

        from jaxeval.benchmarks.ruler.rescore import rescore
        from jaxeval.io.outputs import score_output_folder, writing
        from jaxeval.io.json_files import write_json_atomic

        result = rescore(score.predictions)
        folder = Path(score_output_folder(score.predictions, score.output_path))
        print(summary.format_table(result))
        path = folder / "ruler_rescored.json"
        with writing(path):
            folder.mkdir(parents=True, exist_ok=True)
            write_json_atomic(path, {**result, "summary": summary.summarize(result)})
        print(f"wrote {path}")
        return 0


BENCHMARK = Ruler()
