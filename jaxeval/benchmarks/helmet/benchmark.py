"""HELMET and its AgenticLU subset as a jaxeval Benchmark: `jaxeval run --tasks helmet,helmet_agenticlu`
with the --helmet_* settings, and

    jaxeval score --benchmark helmet --predictions FILE_OR_DIR [--helmet_judge SPEC] [--output_path DIR]

which re-scores HELMET's own output JSON (or jaxeval's results) without a model; with a judge it
is the separate judge pass (NarrativeQA, summarisation; --helmet_agenticlu: the binary judge).
Judge SPEC: "http:BASE_URL:MODEL" or "local:PATH" (jaxeval.judges.make_judge).
"""

from __future__ import annotations

import dataclasses
import typing

from jaxeval.benchmarks.base import Benchmark, JudgeCalls, RunContext
from jaxeval.benchmarks.helmet import summary
from jaxeval.benchmarks.helmet.tasks import CATEGORIES, SAMPLE_DIR
from jaxeval.benchmarks.settings import setting
from jaxeval.errors import ConfigError
from jaxeval.judges.options import JudgeOptions
from jaxeval.benchmarks.helmet.tasks import HUB_ID

SAMPLE_CATEGORIES = ("recall", "rag", "longqa")  # what the embedded sample holds (8k tier)
AGENTICLU_CATEGORIES = ("rag", "longqa")
# Judge call settings: HELMET's GPT-4o wrapper; AgenticLU's binary verdict; the TRUE NLI model.
HELMET_JUDGE = {"temperature": 0.1, "top_p": 0.9, "max_tokens": 4096}
AGENTICLU_JUDGE = {"temperature": 0.0, "max_tokens": 256}
NLI_JUDGE = {"temperature": 0.0, "max_tokens": 10}
JUDGE_FIELDS = ("judge", "judge_key_env", "judge_max_tokens", "nli_judge", "agenticlu_prompt")


@dataclasses.dataclass(frozen=True)
class HelmetSettings:
    data: str | None = setting(None, "HELMET data folder (released layout) or princeton-nlp/HELMET "
                                     "(default: embedded sample)")
    categories: str | None = setting(None, f"comma-separated of {','.join(CATEGORIES)} (default: all; sample: "
                                           f"{','.join(SAMPLE_CATEGORIES)})")
    lengths: str | None = setting(None, "8k,16k,32k,64k,128k (default: all; sample: 8k)")
    llama2_tokenizer: str | None = setting(None, "tokenizer folder/id for LongQA/summarisation pre-truncation "
                                                 "(meta-llama/Llama-2-7b-hf)")
    no_chat_template: bool = setting(False, "prompt every dataset as a completion, no chat template (HELMET's "
                                            "use_chat_template False, as it evaluates base models); without it a "
                                            "tokenizer lacking a chat template is refused before the run starts")
    seed: int = setting(42, "sampling seed (AgenticLU samples)")
    agenticlu_temperature: float = setting(0.6)
    agenticlu_generation_max_length: int = setting(1024)
    judge: str | None = setting(None, "judge for NarrativeQA / summarisation (AgenticLU: its binary judge): "
                                      "http:BASE_URL:MODEL (key from --helmet_judge_key_env) or local:PATH")
    judge_key_env: str = setting("OPENAI_API_KEY", "env variable holding the API key", hashed=False)
    judge_max_tokens: int | None = setting(None, "judge reply limit (default: HELMET's 4096; AgenticLU 256)")
    nli_judge: str | None = setting(None, "ALCE citation NLI judge (google/t5_xxl_true_nli_mixture behind http:... "
                                          "or local:PATH); without it citation recall/precision are not scored")
    agenticlu_prompt: str | None = setting(None, "AgenticLU judge prompt file ({question} {gold} {prediction}); "
                                                 "default: the card's form")


def _split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def judge_calls(score_flags) -> JudgeCalls:
    """The judge flags of `jaxeval score --benchmark helmet` (its rescore hook's own parsed flags)."""
    from jaxeval.judges.options import DEFAULTS

    return JudgeCalls(*(getattr(score_flags, name, DEFAULTS[name]) for name in ("judge_timeout", "judge_retries",
                                                                                "judge_max_failures")))


def make_judges(settings: HelmetSettings, calls: JudgeCalls, agenticlu: bool):
    from jaxeval.judges import make_judge

    def build(spec, options):
        if spec is None:
            return None
        extra = {"api_key_env": settings.judge_key_env, "timeout": calls.timeout, "retries": calls.retries} \
            if spec.startswith("http:") else {}
        return make_judge(spec, **options, **extra)

    options = dict(AGENTICLU_JUDGE if agenticlu else HELMET_JUDGE)
    if settings.judge_max_tokens is not None:
        options["max_tokens"] = settings.judge_max_tokens
    judge = build(settings.judge, options)
    return judge, build(settings.nli_judge, NLI_JUDGE)


def helmet_task_units(settings: HelmetSettings, agenticlu: bool):
    """The task's EvalUnits and its data folder."""
    from jaxeval.benchmarks.helmet.tasks import helmet_units

    sample = settings.data is None
    default_categories = AGENTICLU_CATEGORIES if agenticlu else (SAMPLE_CATEGORIES if sample else CATEGORIES)
    categories = _split(settings.categories) or list(default_categories)
    if agenticlu and set(categories) - set(AGENTICLU_CATEGORIES):
        raise ConfigError("the AgenticLU subset covers only the rag and longqa categories")
    lengths = _split(settings.lengths) or (["8k"] if sample else None)
    units = helmet_units(categories, lengths, agenticlu=agenticlu)
    if settings.no_chat_template:
        units = [dataclasses.replace(unit, use_chat_template=False) for unit in units]
    return units, SAMPLE_DIR if sample else settings.data


def _check_judge_settings(settings: HelmetSettings, calls: JudgeCalls) -> None:
    """Judge specs parse and their settings are sane, without calling or loading a judge."""
    from pathlib import Path

    if settings.judge_max_tokens is not None and settings.judge_max_tokens < 1:
        raise ConfigError(f"--helmet_judge_max_tokens must be >= 1, got {settings.judge_max_tokens}")
    local = {}  # a local judge is a model: only its folder is checked here, it loads when the run needs it
    for name in ("judge", "nli_judge"):
        spec = getattr(settings, name)
        if spec and spec.startswith("local:"):
            if not Path(spec[len("local:"):]).is_dir():
                raise ConfigError(f"--helmet_{name} {spec}: no such model folder")
            local[name] = None
    make_judges(dataclasses.replace(settings, **local), calls, agenticlu=False)  # HTTP specs: parsed, not called


def _run_setting(name: str) -> tuple:
    """A HelmetSettings field as the score command's --helmet_<name>: the run's judge settings, same flags."""
    field = next(f for f in dataclasses.fields(HelmetSettings) if f.name == name)
    return f"helmet_{name}", typing.get_type_hints(HelmetSettings)[name], dataclasses.field(
        default=field.default, metadata=field.metadata)


# The flags of `jaxeval score --benchmark helmet`: the judge flags of `jaxeval run` (JudgeOptions) and the
# run's judge settings, beside its own
HelmetScoreOptions = dataclasses.make_dataclass("HelmetScoreOptions", [
    ("predictions", str, setting("", "HELMET output JSON (eval.py), a folder of them, or a jaxeval results JSON",
                                 required=True)),
    ("output_path", str | None, setting(None, "folder for helmet_rescored.json (default: a new folder "
                                              "<predictions>_rescored beside them)")),
    ("helmet_agenticlu", bool, setting(False, "judge with the AgenticLU binary judge")),
    ("helmet_keypoints", str | None, setting(None, "JSONL of id + keypoints (InfBench) or summary/short_keypoints "
                                                   "(Multi-LexSum)")),
    *(_run_setting(name) for name in JUDGE_FIELDS)], bases=(JudgeOptions,), frozen=True)


class Helmet(Benchmark):
    ScoreOptions = HelmetScoreOptions
    name = "helmet"
    hub_id = HUB_ID
    tasks = ("helmet", "helmet_agenticlu")
    Settings = HelmetSettings
    version = summary.VERSION

    def describe(self) -> dict:
        return summary.describe()

    def summarize(self, task: str, result: dict) -> dict:
        return summary.summarize(task, result)

    def planned_units(self, task: str, settings: HelmetSettings, tokenizer):
        from jaxeval.benchmarks.helmet.planned import planned_units

        agenticlu = task == "helmet_agenticlu"
        reply = settings.judge_max_tokens or (AGENTICLU_JUDGE if agenticlu else HELMET_JUDGE)["max_tokens"]
        return planned_units(settings, helmet_task_units(settings, agenticlu)[0], agenticlu, tokenizer, reply)

    def report_view(self, task: str):
        from jaxeval.benchmarks.helmet.report_view import helmet_view

        return helmet_view

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.benchmarks.helmet.sample_scores import helmet_sample_scores

        return helmet_sample_scores(task, section, samples)

    def check(self, task: str, settings: HelmetSettings, ctx: RunContext) -> None:
        """The settings `run` would reject, checked before anything loads (`run` and `validate`):
        units, generation settings, judge specs and limits, the AgenticLU prompt file."""
        from jaxeval.benchmarks.helmet.judging import read_prompt

        helmet_task_units(settings, agenticlu=task == "helmet_agenticlu")
        _check_judge_settings(settings, ctx.judge)
        if settings.agenticlu_generation_max_length < 1:
            raise ConfigError(f"--helmet_agenticlu_generation_max_length must be >= 1, "
                              f"got {settings.agenticlu_generation_max_length}")
        if not settings.agenticlu_temperature >= 0:
            raise ConfigError(f"--helmet_agenticlu_temperature must be >= 0, got {settings.agenticlu_temperature}")
        if settings.agenticlu_prompt:
            read_prompt(settings.agenticlu_prompt)

    def check_chat_template(self, task: str, settings: HelmetSettings, has_template: bool, model_path: str) -> None:
        """Refuse, before any compute, a tokenizer without a chat template for datasets HELMET
        prompts in chat mode (`run` after loading the model, `validate` from the model's files)."""
        if has_template:
            return
        units, _ = helmet_task_units(settings, agenticlu=task == "helmet_agenticlu")
        chat = sorted({unit.dataset for unit in units if unit.use_chat_template})
        if chat:
            raise ConfigError(f"{model_path}: the tokenizer has no chat template, and {task} prompts "
                              f"{', '.join(chat)} with one; add a chat template to the model folder, or pass "
                              f"--helmet_no_chat_template to prompt them as completions (as HELMET does for base "
                              f"models)")

    def validate(self, task: str, settings: HelmetSettings) -> list[str]:
        """Load and check every file the task would read (no model): one line per unit."""
        from jaxeval.benchmarks.helmet.data import resolve_data_root
        from jaxeval.benchmarks.helmet.prepare import select_samples

        units, data = helmet_task_units(settings, agenticlu=task == "helmet_agenticlu")
        root = resolve_data_root(data)
        lines = []
        for unit in units:
            rows, _ = select_samples(unit, root, 0 if task == "helmet_agenticlu" else unit.shots)
            lines.append(f"{unit.dataset} {unit.length}: {len(rows)} samples")
        return lines

    def samples(self, ctx: RunContext, settings: HelmetSettings):
        from jaxeval.benchmarks.helmet.runner import GenerationSettings, HelmetTask

        agenticlu = ctx.task == "helmet_agenticlu"
        units, data = helmet_task_units(settings, agenticlu)
        if agenticlu:
            generation = GenerationSettings(temperature=settings.agenticlu_temperature, top_p=1.0, seed=settings.seed,
                                            shots=0, generation_max_length=settings.agenticlu_generation_max_length)
        else:
            generation = GenerationSettings(seed=settings.seed)
        llama2 = None
        if settings.llama2_tokenizer:
            from transformers import AutoTokenizer
            llama2 = AutoTokenizer.from_pretrained(settings.llama2_tokenizer)
        judge, nli = make_judges(settings, ctx.judge, agenticlu)
        judge, nli = ctx.wrap_judge(judge, "judge"), ctx.wrap_judge(nli, "nli_judge")

        def table(result: dict) -> str:
            _record_judge_summaries(result, judge, nli)
            return format_table(result)

        return HelmetTask(ctx.model, units, data, limit=ctx.limit, settings=generation, judge=judge, nli=nli,
                          agenticlu=agenticlu, agenticlu_prompt=settings.agenticlu_prompt, llama2_tokenizer=llama2,
                          log_prompts=ctx.log_prompts, table=table)

    def rescore(self, score: HelmetScoreOptions) -> int:
        """Re-score (and judge) saved outputs, write helmet_rescored.json; JUDGE_FAILURE_EXIT after
        writing when more judgements are missing than --judge_max_failures allows."""
        import sys
        from pathlib import Path

        from jaxeval.benchmarks.helmet.rescore import read_keypoints, rescore
        from jaxeval.io.outputs import score_output_folder
        from jaxeval.judges.options import JUDGE_FAILURE_EXIT, judge_failure
        from jaxeval.io.json_files import write_json_atomic

        from jaxeval.judges.options import check_judge_arguments

        check_judge_arguments(score)
        settings, calls = self.settings(score), judge_calls(score)
        _check_judge_settings(settings, calls)
        if score.helmet_agenticlu_prompt:
            from jaxeval.benchmarks.helmet.judging import read_prompt

            read_prompt(score.helmet_agenticlu_prompt)
        folder = score_output_folder(score.predictions, score.output_path)
        judge, nli = make_judges(settings, calls, score.helmet_agenticlu)
        keypoints = read_keypoints(score.helmet_keypoints) if score.helmet_keypoints else None
        result = rescore(score.predictions, judge=judge, nli=nli, agenticlu=score.helmet_agenticlu,
                         agenticlu_prompt=score.helmet_agenticlu_prompt, keypoints=keypoints)
        _record_judge_summaries(result, judge, nli)
        print(format_table(result))
        for unit in result["units"]:
            check = unit["official_check"]
            if check["compared"]:
                state = "identical to" if check["identical"] else f"differs ({', '.join(check['differences'])}) from"
                print(f"{unit['dataset']} {unit['length']}: {state} the official averages in {unit['source']}")
            if check.get("items_compared"):
                print(f"{unit['dataset']} {unit['length']}: {check['items_differing']} of {check['items_compared']} items "
                      f"differ from their saved per-item metrics")
        print(f"wrote {write_json_atomic(Path(folder) / 'helmet_rescored.json', result)}")
        failure = judge_failure({"helmet": result}, score.judge_max_failures)
        if failure:
            print(f"jaxeval: error: {failure}", file=sys.stderr)
            return JUDGE_FAILURE_EXIT
        return 0


BENCHMARK = Helmet()


def judged_counts(result: dict, judge, nli) -> dict | None:
    """The task's judgements for the --judge_max_failures rule (jaxeval/judges/options.py):
    every judged item of every unit, and every NLI call; None without a judge."""
    from jaxeval.judges.options import count_judgements

    if judge is None and nli is None:
        return None
    summaries = [summary for unit in result["units"] for summary in (unit.get("judge") or {}).values()] \
        if judge is not None else []
    if nli is not None and hasattr(nli, "summary"):
        calls = nli.summary()
        summaries.append({"judged": calls["calls"] - calls["failed"], "failed": calls["failed"],
                          "failure_reasons": calls["failures_by_kind"]})
    return count_judgements(summaries)


def _record_judge_summaries(result: dict, judge, nli) -> None:
    for name, obj in (("judge_calls", judge), ("nli_judge_calls", nli)):
        if obj is not None and hasattr(obj, "summary"):
            result[name] = obj.summary()
    counts = judged_counts(result, judge, nli)
    if counts is not None:
        result["judged"] = counts


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_table(result: dict) -> str:
    lines = [f"{'dataset':<28}{'length':>7}  headline"]
    for unit in result["units"]:
        heads = ", ".join(f"{k}={_fmt(v)}" for k, v in unit["headline"].items()) or "-"
        judged = unit.get("judge") or {}
        fails = sum(s.get("failed", 0) for s in judged.values())
        lines.append(f"{unit['dataset']:<28}{unit['length']:>7}  {heads}" + (f"  (judge failures: {fails})" if fails else ""))
    if "accuracy_table" in result:
        lines.append("AgenticLU accuracy (%) by length:" + ("" if result.get("judge") else
                                                              "  (no --helmet_judge: not scored)"))
        for dataset, row in result["accuracy_table"].items():
            lines.append(f"  {dataset:<26}" + "  ".join(f"{length}={_fmt(v)}" for length, v in row.items()))
    for length, row in (result.get("collect") or {}).items():
        cats = ", ".join(f"{c}={_fmt(v['score'])}{'' if v['complete'] else '*'}" for c, v in row["categories"].items())
        lines.append(f"{length}: {cats}; overall={_fmt(row['overall'])}  (* incomplete category)")
    if result.get("judged"):
        from jaxeval.judges.options import describe_missing

        lines.append(f"judge: {describe_missing(result['judged'])}")
    return "\n".join(lines)
