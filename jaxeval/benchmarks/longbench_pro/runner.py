"""LongBenchProTask and run_longbench_pro: load, prompt, generate every sample `runs` times, score, summarise.

The backend is a jaxeval.engine.backend.LanguageModel with .config.max_position_embeddings
(jaxeval.api.Model). Each (record, run) is one sample, journaled under
"longbench_pro/{mode}/{record id}/{run}" when a journal is given; a journaled sample is not
generated again. Scoring runs after generation, so a journal survives a scoring change.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.base import check_limit, limit_count, prompt_fields, prompt_text, run_standalone
from jaxeval.benchmarks.loop import Done, Generate, Generated, Group, Sample, Task
from jaxeval.benchmarks.longbench_pro.data import LongBenchProRecord, load_records
from jaxeval.benchmarks.longbench_pro.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench_pro.prompts import (
    PromptSettings, build_prompt, question_field, reasoning_enabled, split_reasoning,
)
from jaxeval.benchmarks.longbench_pro.scoring import score_row, summarize_rows
from jaxeval.benchmarks.longbench_pro.summary import format_table
from jaxeval.benchmarks.longbench_pro.semsim import SemSimSettings, load_semsim
from jaxeval.benchmarks.longbench_pro.tasks import RUNS_PER_SAMPLE, SHIPPED_SAMPLE, max_new_tokens_for
from jaxeval.errors import ConfigError
from jaxeval.generation import GenerationOptions, require_tokenizer, resolve_chat_format

OFFICIAL_TRUNCATION_TOKENIZER = "Qwen/Qwen2.5-7B-Instruct"  # any Qwen2.5 tokenizer.json is the same


@dataclasses.dataclass(frozen=True)
class Sampling:
    temperature: float
    top_p: float
    source: str  # "given", "generation_config.json" or "default 1.0 (official fallback)"


def resolve_sampling(model_path: str, temperature: float | None, top_p: float | None) -> Sampling:
    """The model's default sampling settings, with temperature 1.0 where it has none (official rule)."""
    config_file = Path(model_path) / "generation_config.json"
    defaults = {}
    if config_file.is_file():
        from jaxeval.io.inputs import read_json

        defaults = read_json(config_file, ConfigError)
        if not isinstance(defaults, dict):
            raise ConfigError(f"{config_file}: expected a JSON object")
    source = "given" if temperature is not None else (
        "generation_config.json" if "temperature" in defaults else "default 1.0 (official fallback)")
    return Sampling(temperature if temperature is not None else float(defaults.get("temperature", 1.0)),
                    top_p if top_p is not None else float(defaults.get("top_p", 1.0)), source)


def resolve_truncation_tokenizer(spec: str, model_tokenizer) -> tuple[object, str, str | None]:
    """(tokenizer, what it is, deviation or None). spec: "auto" (the Qwen2.5 tokenizer from the
    local HF cache, else the model's own), "model", or a local folder / hub id."""
    from transformers import AutoTokenizer

    if spec == "model":
        return model_tokenizer, "the evaluated model's", "truncation counted in the evaluated model's tokens, " \
                                                          "not Qwen2.5's (asked for)"
    if spec == "auto":
        try:
            return (AutoTokenizer.from_pretrained(OFFICIAL_TRUNCATION_TOKENIZER, local_files_only=True),
                    OFFICIAL_TRUNCATION_TOKENIZER, None)
        except Exception:
            return model_tokenizer, "the evaluated model's", (
                f"the Qwen2.5 truncation tokenizer ({OFFICIAL_TRUNCATION_TOKENIZER}) is not in the local cache: "
                "truncation counted in the evaluated model's tokens")
    try:
        return AutoTokenizer.from_pretrained(spec), spec, None
    except Exception as error:
        raise ConfigError(f"truncation tokenizer {spec!r}: cannot load ({type(error).__name__}: {error})") from None


def select_records(records: Sequence[LongBenchProRecord], limit: int | None) -> list[LongBenchProRecord]:
    """All records, or the first `limit` (or that fraction, rounded up) of each primary task (file order kept)."""
    if limit is None:
        return list(records)
    check_limit(limit, "limit")
    totals = Counter(record.primary_task for record in records)
    taken: dict[str, int] = {}
    chosen = []
    for record in records:
        if taken.get(record.primary_task, 0) < limit_count(totals[record.primary_task], limit):
            taken[record.primary_task] = taken.get(record.primary_task, 0) + 1
            chosen.append(record)
    return chosen


def sample_key(mode: str, record_id: str, run: int) -> str:
    return f"longbench_pro/{mode}/{record_id}/{run}"


class LongBenchProTask(Task):
    """LongBench Pro on the sample loop: one group of (record, run) samples, run-major (--limit is
    taken per primary task, select_records); each run samples from its own seed."""

    def __init__(self, backend, data: str | Path = SHIPPED_SAMPLE, *, mode: str = "nonthinking",
                 model_type: str = "Instruct", runs: int = RUNS_PER_SAMPLE, truncation_length: int | None = None,
                 truncation_tokenizer: str = "auto", max_new_tokens: int | None = None,
                 temperature: float | None = None, top_p: float | None = None, seed: int = 0,
                 chat_format: str = "auto", limit: int | None = None, semsim: SemSimSettings = SemSimSettings(),
                 options: ScoringOptions = DEFAULT_OPTIONS, log_prompts: bool = False):
        self.tokenizer = tokenizer = require_tokenizer(backend, "LongBench Pro")
        if not isinstance(runs, int) or runs < 1:
            raise ConfigError(f"runs must be a positive integer, got {runs!r}")
        self.window = window = backend.config.max_position_embeddings
        self.budget = budget = max_new_tokens if max_new_tokens is not None else max_new_tokens_for(mode)
        self.deviations: list[str] = []
        if truncation_length is None:  # the official L of a 128k-class model, or what the window leaves
            truncation_length = 120_000 if window >= 128_000 else window - budget
            if window < 128_000:
                self.deviations.append(f"truncation length L = window {window} - output {budget} = "
                                       f"{truncation_length} (official runs use a fixed L per model, 120000 for "
                                       "128k models)")
        self.settings = PromptSettings(mode=mode, model_type=model_type, truncation_length=truncation_length,
                                       max_new_tokens=budget, chat_format=chat_format)
        self.cut_tokenizer, self.cut_tokenizer_name, deviation = resolve_truncation_tokenizer(truncation_tokenizer,
                                                                                              tokenizer)
        if deviation:
            self.deviations.append(deviation)
        self.sampling = resolve_sampling(backend.path if hasattr(backend, "path") else "", temperature, top_p)
        if self.sampling.temperature == 0.0 and runs > 1:
            self.deviations.append(f"greedy decoding (temperature 0): the {runs} runs are identical")
        self.reasoning = reasoning_enabled(mode, model_type)
        self.data, self.mode, self.model_type, self.runs, self.seed = data, mode, model_type, runs, seed
        self.truncation_length, self.chat_format, self.limit = truncation_length, chat_format, limit
        self.semsim, self.options, self.log_prompts = semsim, options, log_prompts
        self.every = load_records(data)
        self.records = select_records(self.every, limit)
        self.prompts: dict[str, object] = {}  # by key: the prompt built for a sample computed in this run

    def groups(self) -> list[Group]:
        return [Group("longbench_pro", [Sample(sample_key(self.mode, record.id, run), (record, run))
                                        for run in range(1, self.runs + 1) for record in self.records],
                      limit=False, unit="sample")]

    def _prompt(self, record: LongBenchProRecord):
        return build_prompt(record, self.settings, self.tokenizer, self.cut_tokenizer, self.window)

    def request(self, sample: Sample) -> Generate:
        record, run = sample.item
        prompt = self.prompts[sample.key] = self._prompt(record)
        return Generate(prompt.ids, GenerationOptions(self.budget, temperature=self.sampling.temperature,
                                                      top_p=self.sampling.top_p, seed=self.seed + run - 1))

    def score(self, sample: Sample, output: Generated) -> dict:
        (record, run), prompt = sample.item, self.prompts.pop(sample.key)
        prediction, reasoning_text = split_reasoning(output.text, self.reasoning)
        return {"key": sample.key, "id": record.id, "bon_idx": run, **record.labels(),
                "answer": list(record.answer), "target": list(record.answer), "prediction": prediction,
                "raw_output": output.text, "reasoning_content": reasoning_text,
                **prompt_fields(prompt_text(self.tokenizer, prompt.ids), len(prompt.ids)),
                "message_tokens": prompt.message_tokens, "truncated": prompt.truncated,
                "window_truncated": prompt.window_truncated,
                "finish_reason": getattr(output.generation, "finish_reason", None)}

    def summarize(self, done: list[Done]) -> tuple[dict, str]:
        generated, deviations, tokenizer = done[0].records, list(self.deviations), self.tokenizer
        similarity, semsim_description = load_semsim(self.semsim) if any(
            r["secondary_task"].startswith("T4") for r in generated) else (None, {"model": None, "unused": True})
        if semsim_description.get("deviation"):
            deviations.append(semsim_description["deviation"])
        samples = [score_row(row, similarity, self.options) for row in generated]
        result = summarize_rows(samples, bon_num=self.runs)
        result["samples"] = samples
        result["sample_log"] = samples  # --log_samples: `jaxeval score --benchmark longbench_pro` reads them back
        if self.log_prompts:  # the texts go to the samples file only (rebuilt: a resumed sample's prompt is not journaled)
            texts = {record.id: prompt_text(tokenizer, self._prompt(record).ids) for record in self.records}
            result["sample_log"] = [{**row, "prompt": texts[row["id"]]} for row in samples]
        result["scoring"] = {**self.options.describe(), "semsim": semsim_description}
        result["prompting"] = {
            "data": str(self.data), "mode": self.mode, "model_type": self.model_type,
            "question_field": question_field(self.mode, self.model_type), "reasoning_enabled": self.reasoning,
            "runs": self.runs, "limit": self.limit, "truncation_length": self.truncation_length,
            "truncation_tokenizer": self.cut_tokenizer_name, "max_new_tokens": self.budget, "window": self.window,
            "chat_format": resolve_chat_format(self.chat_format, tokenizer),
            "temperature": self.sampling.temperature, "top_p": self.sampling.top_p,
            "sampling_source": self.sampling.source,
            "seed": self.seed, "truncated": sum(1 for s in samples if s["truncated"]),
            "window_truncated": sum(1 for s in samples if s["window_truncated"]),
        }
        result["deviations"] = deviations
        result["records_before_limit"] = len(self.every)
        return result, format_table(result["summary"], result["extra"])


def run_longbench_pro(backend, data: str | Path = SHIPPED_SAMPLE, *, mode: str = "nonthinking",
                      model_type: str = "Instruct", runs: int = RUNS_PER_SAMPLE, truncation_length: int | None = None,
                      truncation_tokenizer: str = "auto", max_new_tokens: int | None = None,
                      temperature: float | None = None, top_p: float | None = None, seed: int = 0,
                      chat_format: str = "auto", limit: int | None = None, batch_size: int = 8,
                      semsim: SemSimSettings = SemSimSettings(), options: ScoringOptions = DEFAULT_OPTIONS,
                      journal=None, log_prompts: bool = False) -> dict:
    """Generate and score LongBench Pro; returns summary, extra, samples, prompting, deviations."""
    task = LongBenchProTask(backend, data, mode=mode, model_type=model_type, runs=runs,
                            truncation_length=truncation_length, truncation_tokenizer=truncation_tokenizer,
                            max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed,
                            chat_format=chat_format, limit=limit, semsim=semsim, options=options,
                            log_prompts=log_prompts)
    return run_standalone(task, "longbench_pro", backend,
                          journal=journal, limit=limit, batch_size=batch_size, log_prompts=log_prompts)
