"""The Benchmark base: everything the CLI, the run flow, `jaxeval score` and `jaxeval report`
know about a benchmark comes from its Benchmark object (jaxeval/benchmarks/registry.py lists them).

A benchmark package defines one subclass and one instance:

    class LongBench(Benchmark):
        name = "longbench"                    # flag prefix (--longbench_<field>), `score --benchmark` name
        tasks = ("longbench", "longbench_e")  # what `--tasks` may name
        Settings = LongBenchSettings          # frozen dataclass of jaxeval.benchmarks.settings.setting fields

        def samples(self, ctx, settings): ... # -> a jaxeval.benchmarks.loop.Task: groups of samples,
                                              #    request(sample), score(sample, output), summarize

The framework's sample loop (jaxeval/benchmarks/loop.py) runs the Task: --limit, order, the
journal (resume by key, hosts, progress), batching of the model's requests. `run(ctx, settings)`
is the escape hatch for work that is not one request per sample. A runner gets a RunContext
(model, journal, the shared run settings) and its own Settings, never the command line. A
`sample_log` list in the result (dicts with a "key") goes to the --log_samples JSONL, not the
results file. The run's config hash covers the
shared settings and the hashed Settings of the benchmarks whose tasks run, nothing else.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Callable

from jaxeval.benchmarks import settings as settings_fields
from jaxeval.benchmarks.loop import (  # noqa: F401 (--limit and the --log_samples prompt fields: the loop's)
    check_limit, limit_count, limited, prompt_fields, prompt_text, run_task,
)
from jaxeval.options.run import parse_limit  # noqa: F401  (its home before RunOptions)


@dataclasses.dataclass(frozen=True)
class PlannedUnit:
    """`jaxeval plan` without the data (Benchmark.planned_units): one group of a benchmark's items
    that share their request shape."""

    leaf: str  # the results leaf the items count under (the plan's items)
    items: int  # before --limit
    prompt_tokens: int  # per item, before the model's window caps it
    max_new_tokens: int
    judge_prompts: tuple[int, ...] = ()  # tokens of each judge prompt one item sends (empty: none)
    judge_reply_tokens: int = 0


@dataclasses.dataclass(frozen=True)
class PlannedTask:
    units: tuple[PlannedUnit, ...]
    source: str  # where the counts and lengths come from


@dataclasses.dataclass(frozen=True)
class JudgeCalls:
    """The shared judge flags (--judge_timeout, --judge_retries, --judge_max_failures)."""

    timeout: float = 60.0
    retries: int = 3
    max_failures: float = 0.0


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a runner may use besides its own settings."""

    task: str
    model: object  # jaxeval.api.Model: .tokenizer, .config, .path, read() / generate()
    journal: object | None = None
    limit: int | float | None = None  # first N items per config and length, or that fraction (limited())
    batch_size: int = 8
    read_rows: int | None = None  # sequences read per step; None: the sample loop's rule (loop.read_rows)
    seed: int = 0
    model_path: str = ""  # as the user gave it (for messages)
    output_folder: str = "results"
    judge: JudgeCalls = JudgeCalls()
    log_prompts: bool = False  # --log_samples_prompts: the prompt text in each --log_samples row
    # `jaxeval plan`: (judge, label) -> the judge to call instead (one that counts); None: the judge itself
    judge_wrapper: Callable | None = None

    def wrap_judge(self, judge, label: str):
        return judge if self.judge_wrapper is None or judge is None else self.judge_wrapper(judge, label)


class Benchmark:
    """Define `samples` (or override `run`); the other hooks have defaults a minimal benchmark can keep."""

    name: str = ""
    tasks: tuple[str, ...] = ()
    Settings: type = None  # a frozen dataclass (jaxeval.benchmarks.settings)
    version: str = "1"  # of jaxeval's implementation; bump when a number it reports changes
    aliases: dict[str, str] = {}  # deprecated flag (without dashes) -> setting field
    teacher_forced: bool = False  # reads log-probs of given text (no prompt to compress: no SnapKV)
    hub_id: str = ""  # the real data's hub id: `--<name>_data HUB_ID` (data_source() names it)

    # -- flags ----------------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        settings_fields.add_arguments(parser, self.name, self.Settings, self.aliases, self.name)

    def settings(self, flags) -> object:
        """This benchmark's Settings from a run's flags by dest (jaxeval.options.flags.RunFlags.extra), or
        from the score command's own parsed flags."""
        return settings_fields.from_args(self.name, self.Settings, flags)

    def hashed_settings(self, settings) -> dict:
        """{flag: value} of the settings that can change a number: they name the run."""
        return settings_fields.flag_values(self.name, settings, hashed_only=True)

    def recorded_settings(self, settings) -> dict:
        return settings_fields.flag_values(self.name, settings)

    def setting_keys(self, *, hashed: bool | None = None, compare: bool | None = None) -> set[str]:
        """Its settings' flag names (= recorded config keys), filtered by `hashed` / `compare` (None: any)."""
        return settings_fields.flag_keys(self.name, self.Settings, hashed=hashed, compare=compare)

    # -- before the model loads ----------------------------------------------------------------
    def describe(self) -> dict[str, dict]:
        """`jaxeval ls`: task -> {"about": str, "configs": [...], "lengths": [...]}."""
        return {task: {} for task in self.tasks}

    def data_source(self, settings) -> dict:
        """Where the task's items came from: {"data": given, "shipped_sample": True when it is the
        stand-in sample shipped in jaxeval/assets (its scores are no benchmark's), "real_data": the
        flag that reads the real set}. Settings without a data field: {}."""
        if not hasattr(settings, "data"):
            return {}
        from pathlib import Path

        from jaxeval.embedded import ASSETS

        data = settings.data
        sample = data is None or Path(str(data)).resolve().is_relative_to(ASSETS)
        out = {"data": str(data) if data is not None else "shipped sample", "shipped_sample": sample}
        if self.hub_id:
            out["real_data"] = f"--{self.name}_data {self.hub_id} (a hub id, or a local copy of it)"
        return out

    def check(self, task: str, settings, ctx: RunContext) -> None:
        """Raise a JaxevalError for any setting the run would reject (`run` and `validate`)."""

    def output_files(self, task: str, settings) -> list[str]:
        """Files the task writes besides the run's own (checked writable before the model loads)."""
        return []

    def check_chat_template(self, task: str, settings, has_template: bool, model_path: str) -> None:
        """Raise when the task needs the model's chat template and it has none (after the model
        loads, before any compute; `validate` calls it from the model folder's files)."""

    def validate(self, task: str, settings) -> list[str]:
        """`jaxeval validate`: load and check the task's data, one line per check."""
        return [f"{task}: no data check; its data is checked when it runs"]

    def planned_units(self, task: str, settings, tokenizer):
        """`jaxeval plan` when the task's data is not here (a missing folder, a hub id offline):
        a jaxeval.plan.from_counts.PlannedTask built from the counts and prompt lengths the
        benchmark itself defines, or None (the plan then reports the missing data as an error)."""
        return None

    # -- the run ---------------------------------------------------------------------------------
    def samples(self, ctx: RunContext, settings):
        """ctx.task's samples and how each is run, scored and summarised: a
        jaxeval.benchmarks.loop.Task, which the framework's sample loop runs (limit, order, journal,
        batching, progress). None: the benchmark overrides run() instead."""
        return None

    def run(self, ctx: RunContext, settings) -> tuple[dict, str]:
        """Run ctx.task -> (result section, table printed after it): samples() through the sample
        loop; override only where a task's work is not one request per sample."""
        task = self.samples(ctx, settings)
        if task is None:
            raise NotImplementedError(f"{type(self).__name__} defines neither samples() nor run()")
        return run_task(ctx, task)

    def summarize(self, task: str, result: dict) -> dict | None:
        """The results-JSON sections of a result (docs/results_schema.md); None: details only."""
        return None

    # -- after the run -------------------------------------------------------------------------
    def report_view(self, task: str) -> Callable | None:
        """A function [(run label, section)] -> jaxeval.report.data.BenchmarkView for
        `jaxeval report`, or None (the report's generic view, from the summary)."""
        return None

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        """Per-sample headline scores for `jaxeval report --reference` (paired deltas): a list of
        jaxeval.report.paired.SampleScore read from the task's details `section` or, where it
        holds none, from `samples` (the run's --log_samples rows of the task; None when it wrote
        none). None: this benchmark's results hold no per-sample score."""
        return None

    def reference_tables(self, task: str, reference: tuple, modified: tuple) -> list:
        """Comparisons of its own between a modified run and its reference (agent_bench: the rules'
        follow and retained), as jaxeval.report.data Tables; reference and modified are
        (details section, --log_samples rows or None). [] when it makes none."""
        return []

    # the flags of `jaxeval score --benchmark NAME` (only when rescore is overridden): a frozen dataclass of
    # jaxeval.benchmarks.settings.setting fields, named as the flags (no prefix)
    ScoreOptions: type | None = None

    def add_score_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Flags of `jaxeval score --benchmark NAME`: its ScoreOptions' (and any it adds of its own)."""
        if self.ScoreOptions is not None:
            settings_fields.add_flags(parser, self.ScoreOptions)

    def score_options(self, parsed) -> object:
        """The ScoreOptions of the score command's parsed flags."""
        return settings_fields.values_of(self.ScoreOptions, parsed)

    def rescore(self, options) -> int:
        """`jaxeval score --benchmark NAME`: re-score saved predictions (options: its ScoreOptions), no model;
        exit status."""
        raise NotImplementedError(f"{self.name} has no `jaxeval score`")

    def can_rescore(self) -> bool:
        return type(self).rescore is not Benchmark.rescore

    def add_commands(self, subparsers, model_options: Callable, load_model: Callable) -> None:
        """Subcommands of its own (`jaxeval agent-bench`)."""


def run_standalone(task, name: str, model, **context) -> dict:
    """The details section of a loop Task run outside `jaxeval run` (the run_<benchmark> functions
    of the library and the tests); context: RunContext fields (journal, limit, batch_size, ...)."""
    return run_task(RunContext(task=name, model=model, **context), task)[0]
