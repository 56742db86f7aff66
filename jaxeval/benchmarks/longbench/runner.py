"""LongBenchTask and run_longbench: load, prompt, generate on the sample loop, score; LongBench v1 or -E.

The backend is a jaxeval.engine.backend.LanguageModel (jaxeval.api.Model), decoding
greedily; samsum gets the official token-level stop (requests.py). Predictions are the
generated tokens decoded with special tokens skipped and nothing stripped, as the official
pred.py; `.text` is used only when a generation has no tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.base import check_limit, prompt_fields, prompt_text, run_standalone
from jaxeval.benchmarks.longbench.data import load_config
from jaxeval.benchmarks.loop import Done, Generate, Generated, Group, Sample, Task
from jaxeval.benchmarks.longbench.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench.predictions import write_prediction_file
from jaxeval.benchmarks.longbench.prompts import CHAT_FORMATS
from jaxeval.benchmarks.longbench.requests import SPLIT, GenerationRequest, build_request
from jaxeval.benchmarks.longbench.results import benchmark_name, format_scores_table, score_datasets
from jaxeval.benchmarks.longbench.scoring import PredictionRow
from jaxeval.benchmarks.longbench.tasks import (
    DATASETS, E_DATASETS, SHIPPED_SAMPLE, TASKS, check_datasets, config_name,
)
from jaxeval.benchmarks.longbench.truncation import prompt_budget
from jaxeval.errors import ConfigError
from jaxeval.generation import GenerationOptions, decoded, generate, resolve_chat_format


def resolve_max_length(max_length: int | None, backend) -> tuple[int, str]:
    """The prompt budget and where it came from: given, or the backend's window minus 500."""
    if max_length is not None:
        if not isinstance(max_length, int) or max_length < 2:
            raise ConfigError(f"max_length must be an integer of at least 2 tokens, got {max_length!r}")
        return max_length, "given"
    window = getattr(getattr(backend, "config", None), "max_position_embeddings", None)
    if isinstance(window, int):
        return prompt_budget(window), f"model window {window} - 500"
    raise ConfigError("max_length (the prompt token budget) is not given and the backend does not "
                      "expose config.max_position_embeddings; pass max_length (window - 500)")


def generate_predictions(backend, tokenizer, requests: Sequence[GenerationRequest], batch_size: int = 8) -> list[str]:
    """The decoded prediction of every request, in order. All requests of one dataset share
    max_new_tokens and stop rule, so they go out in one call, batch_size prompts per engine batch."""
    if not requests:
        return []
    first = requests[0]
    options = GenerationOptions(first.max_new_tokens, stop=first.stop, stop_token_ids=first.stop_token_ids,
                                min_new_tokens=first.min_new_tokens)
    return [decoded(tokenizer, output)
            for output in generate(backend, [r.prompt_ids for r in requests], options, batch_size=batch_size)]


class LongBenchTask(Task):
    """LongBench (e=False, 21 datasets) or LongBench-E (e=True, 13) on the sample loop: one group
    per dataset, in generation-bucket order; a sample's record is its decoded prediction."""

    def __init__(self, backend, tokenizer, data: str | Path = SHIPPED_SAMPLE, datasets: Sequence[str] | None = None,
                 e: bool = False, *, max_length: int | None = None, chat_format: str = "auto",
                 options: ScoringOptions = DEFAULT_OPTIONS, predictions_dir: str | Path | None = None,
                 limit=None, log_prompts: bool = False, sample_log: bool = False):
        check_limit(limit, "limit")
        self.tokenizer, self.data, self.e, self.options, self.limit = tokenizer, data, e, options, limit
        self.chosen = check_datasets(datasets if datasets is not None else (E_DATASETS if e else DATASETS), e)
        self.budget, self.budget_source = resolve_max_length(max_length, backend)
        self.chat_format = chat_format
        self.resolved_format = resolve_chat_format(chat_format, tokenizer, CHAT_FORMATS)
        self.benchmark = benchmark_name(e)
        self.predictions_dir, self.log_prompts, self.sample_log = predictions_dir, log_prompts, sample_log
        # every dataset is loaded and checked before the first generation: bad or empty data stops the run early
        self.every = {dataset: load_config(data, config_name(dataset, e)) for dataset in self.chosen}
        self.built: dict[str, GenerationRequest] = {}  # by sample key: the rows need each prompt again

    def _built(self, sample: Sample) -> GenerationRequest:
        if sample.key not in self.built:
            self.built[sample.key] = build_request(sample.item, self.tokenizer, self.budget, self.resolved_format,
                                                   self.benchmark)
        return self.built[sample.key]

    def groups(self) -> list[Group]:
        return [Group(f"{self.benchmark} {dataset} generation",
                      [Sample("/".join(map(str, (self.benchmark, r.config, SPLIT, r.index, r.id))) + "/0", r)
                       for r in records], bucketed=True, unit="sample", info=dataset)
                for dataset, records in self.every.items()]

    def request(self, sample: Sample) -> Generate:
        built = self._built(sample)
        return Generate(built.prompt_ids, GenerationOptions(built.max_new_tokens, stop=built.stop,
                                                            stop_token_ids=built.stop_token_ids,
                                                            min_new_tokens=built.min_new_tokens))

    def score(self, sample: Sample, output: Generated) -> dict:
        return {"pred": output.text}

    def summarize(self, done: list[Done]) -> tuple[dict, str]:
        rows: dict[str, list[PredictionRow]] = {}
        outputs: dict[str, list[dict]] = {}
        for group in done:
            dataset, records = group.group.info, [sample.item for sample in group.samples]
            predictions = [record["pred"] for record in group.records]
            requests = [self._built(sample) for sample in group.samples]
            rows[dataset] = [PredictionRow(pred=prediction, answers=record.answers, all_classes=record.all_classes,
                                           length=record.length, origin=record.origin)
                             for record, prediction in zip(records, predictions)]
            outputs[dataset] = [{"key": list(request.key), "pred": prediction, "raw_output": prediction,
                                 "target": list(record.answers),
                                 **prompt_fields(prompt_text(self.tokenizer, request.prompt_ids),
                                                 len(request.prompt_ids), self.log_prompts),
                                 "raw_prompt_tokens": request.raw_prompt_tokens,
                                 "truncated": request.truncated, "chat_format": request.chat_format,
                                 "length": record.length}  # the record's own length (LongBench-E's buckets)
                                for request, prediction, record in zip(requests, predictions, records)]
            if self.predictions_dir is not None:
                write_prediction_file(Path(self.predictions_dir) / f"{dataset}.jsonl", rows[dataset])

        result = score_datasets(rows, self.e, self.options)
        for dataset, per_sample in result["sample_scores"].items():
            for output, score in zip(outputs[dataset], per_sample):
                output["score"] = score
        result["prompting"] = {
            "data": str(self.data),
            "max_length": self.budget,
            "max_length_source": self.budget_source,
            "chat_format": self.resolved_format,
            "chat_format_requested": self.chat_format,
            "chat_template_skipped_for": [name for name in self.chosen if TASKS[name].skip_chat_template],
            "samsum_stop": "token ids (EOS, newline) with min_new_tokens=1",
            "truncated": {name: sum(o["truncated"] for o in outputs[name]) for name in self.chosen},
            "limit": self.limit,
        }
        result["outputs"] = outputs
        result["records_before_limit"] = {dataset: len(records) for dataset, records in self.every.items()}
        if self.sample_log:
            result["sample_log"] = [{"key": "/".join(map(str, output["key"])) + "/0", "dataset": dataset, **output}
                                    for dataset, outputs in result["outputs"].items() for output in outputs]
            for dataset_outputs in result["outputs"].values():  # prompt texts go to the samples file only
                for output in dataset_outputs:
                    output.pop("prompt", None)
        return result, format_scores_table(result)


def run_longbench(backend, tokenizer, data: str | Path = SHIPPED_SAMPLE, datasets: Sequence[str] | None = None,
                  e: bool = False, limit: int | None = None, *, max_length: int | None = None,
                  chat_format: str = "auto", batch_size: int | None = None,
                  options: ScoringOptions = DEFAULT_OPTIONS,
                  predictions_dir: str | Path | None = None, journal=None, log_prompts: bool = False) -> dict:
    """Generate and score LongBench (e=False, 21 datasets) or LongBench-E (e=True, 13).

    data: a folder of the official JSONL files, data.zip or "THUDM/LongBench" (default: the
    embedded sample). datasets: v1 names (default: all). limit: the first N records per
    dataset, or that fraction (0 < limit < 1, rounded up). max_length: prompt token budget (default: the backend's window minus 500).
    chat_format: see prompts.py. predictions_dir: also write the official pred.py files there.
    journal: get/put store of finished generations (jaxeval/run/journal.py), per sample.
    batch_size: prompts per journal and engine batch (None: a dataset at once).
    log_prompts: each output also holds its prompt's text (`prompt`; the caller moves it to the
    samples file).
    Returns jaxeval's results (results.py) plus `prompting` and per-record `outputs`.
    """
    task = LongBenchTask(backend, tokenizer, data, datasets, e, max_length=max_length, chat_format=chat_format,
                         options=options, predictions_dir=predictions_dir, limit=limit, log_prompts=log_prompts)
    whole = max(1, *(len(records) for records in task.every.values()))
    return run_standalone(task, task.benchmark, backend,
                          journal=journal, limit=limit, batch_size=batch_size or whole, log_prompts=log_prompts)
