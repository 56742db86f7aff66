"""longctx-agent-bench as a jaxeval Benchmark: `jaxeval run --tasks agent_bench`, its
--agent_bench_* settings, results sections and report view (jaxeval/benchmarks/base.py)."""

from __future__ import annotations

import dataclasses

from jaxeval.benchmarks.agent_bench.defaults import EMBEDDED_AGENT_DATA, split_list
from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.settings import setting
from jaxeval.generation import require_tokenizer
from jaxeval.benchmarks.agent_bench.data import HUB_ID


@dataclasses.dataclass(frozen=True)
class AgentBenchSettings:
    data: str = setting(str(EMBEDDED_AGENT_DATA), "folder or hub id (thinletter/longctx-agent-bench)")
    sets: str = setting("facts,tool_calls,rules_en,rules_cs,rules_de", "comma-separated configs")
    lengths: str = setting("8k", "comma-separated splits")
    mode: str = setting("auto", "alignment mode", choices=("auto", "text"))
    save_scores: str | None = setting(None, "rules: write every target's scores (.json.gz)", hashed=False,
                                      compare=False)
    reference_scores: str | None = setting(None, "rules: the reference's saved scores", compare=False)


class AgentBench(Benchmark):
    name = "agent_bench"
    hub_id = HUB_ID
    tasks = ("agent_bench",)
    Settings = AgentBenchSettings
    teacher_forced = True  # every item is a log-prob read of the with-rule and without-rule texts
    # `jaxeval run` spelled these without the prefix until the settings moved to one shape; run
    # configs (configs/suites/smoke.yaml among them) were written with them, so they keep working
    aliases = {"data": "data", "sets": "sets", "lengths": "lengths", "mode": "mode", "save_scores": "save_scores",
               "reference_scores": "reference_scores"}

    def describe(self) -> dict:
        from jaxeval.benchmarks.agent_bench import CONFIGS, SPLITS

        return {"agent_bench": {"about": "longctx-agent-bench: facts, tool calls and rules far back (teacher-forced)",
                                "configs": list(CONFIGS), "lengths": list(SPLITS)}}

    def output_files(self, task: str, settings: AgentBenchSettings) -> list[str]:
        return [settings.save_scores] if settings.save_scores else []

    def validate(self, task: str, settings: AgentBenchSettings) -> list[str]:
        from jaxeval.benchmarks.agent_bench import load_split

        return [f"agent_bench {config}/{split}: {len(load_split(settings.data, config, split))} items valid"
                for config in split_list(settings.sets) for split in split_list(settings.lengths)]

    def run(self, ctx: RunContext, settings: AgentBenchSettings) -> tuple[dict, str]:
        """Teacher-forced reads of every selected config and length: facts and tool_calls on the
        sample loop, the rules configs' prefix-shared reads of whole sessions beside it."""
        from jaxeval.benchmarks.agent_bench.runner import agent_bench_result, format_rows_table

        tokenizer = require_tokenizer(ctx.model, "longctx-agent-bench")
        result = agent_bench_result(ctx, tokenizer, settings.data, split_list(settings.sets),
                                    split_list(settings.lengths), settings.mode, settings.save_scores,
                                    settings.reference_scores)
        return result, format_rows_table(result)

    def summarize(self, task: str, result: dict) -> dict:
        """The results-JSON sections of an agent_bench result (docs/results_schema.md)."""
        results, n_samples, lengths, higher = {}, {}, {}, {}
        for config, splits in result["sets"].items():
            for split, metrics in splits.items():
                leaf = f"{task}/{config}/{split}"
                results[leaf] = {name: value for name, value in metrics.items()
                                 if isinstance(value, float) or (value is None and name != "mode")}
                higher[leaf] = {name: True for name in results[leaf] if not name.endswith("_stderr")}
                n_samples[leaf] = {"original": result.get("items_before_limit", {}).get(f"{config}/{split}"),
                                   "effective": metrics["items"]}
                lengths[leaf] = split
        headline = [{**row, "subtask": f"{task}/{row['config']}/{row['split']}"} for row in result["rows"]]
        deviations = list(result["mode_notes"])
        if result["reference"] and result["reference"]["note"]:
            deviations.append(result["reference"]["note"])
        return {"results": results, "higher_is_better": higher, "n-samples": n_samples, "lengths": lengths,
                "headline": headline, "versions": self.version, "deviations": deviations,
                "configs": {"mode_requested": result["mode_requested"], "mode": result["mode"],
                            "reference": result["reference"]},
                "truncation": {"policy": "none: a text longer than the model's window is an error"},
                "chat_template": "none: raw session text, teacher-forced"}

    def report_view(self, task: str):
        from jaxeval.benchmarks.agent_bench.report_view import agent_bench_view

        return agent_bench_view

    def sample_scores(self, task: str, section: dict | None, samples: list[dict] | None) -> list | None:
        from jaxeval.benchmarks.agent_bench.sample_scores import agent_bench_sample_scores

        return agent_bench_sample_scores(task, section, samples)

    def reference_tables(self, task: str, reference: tuple, modified: tuple) -> list:
        from jaxeval.benchmarks.agent_bench.sample_scores import rules_tables

        return rules_tables(reference, modified)

    def add_commands(self, subparsers, model_options, load_model) -> None:
        from jaxeval.benchmarks.agent_bench.cli import add_command

        add_command(subparsers, model_options, load_model, self)


BENCHMARK = AgentBench()
