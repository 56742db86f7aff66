"""run_longbench: load, prompt, generate through any backend, score; LongBench v1 or -E.

The backend is a jaxeval.engine.backend.LanguageModel (jaxeval.api.Model), decoding
greedily; samsum gets the official token-level stop (requests.py). Predictions are the
generated tokens decoded with special tokens skipped and nothing stripped, as the official
pred.py; `.text` is used only when a generation has no tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.base import check_limit, limited, prompt_fields, prompt_text
from jaxeval.benchmarks.longbench.data import LongBenchRecord, load_config
from jaxeval.benchmarks.longbench.metrics import DEFAULT_OPTIONS, ScoringOptions
from jaxeval.benchmarks.longbench.predictions import write_prediction_file
from jaxeval.benchmarks.longbench.prompts import CHAT_FORMATS
from jaxeval.benchmarks.longbench.requests import GenerationRequest, build_request
from jaxeval.benchmarks.longbench.results import benchmark_name, score_datasets
from jaxeval.benchmarks.longbench.scoring import PredictionRow
from jaxeval.benchmarks.longbench.tasks import (
    DATASETS, E_DATASETS, SHIPPED_SAMPLE, TASKS, check_datasets, config_name,
)
from jaxeval.benchmarks.longbench.truncation import prompt_budget
from jaxeval.errors import ConfigError
from jaxeval.generation import GenerationOptions, bucket_order, decoded, generate, resolve_chat_format
from jaxeval.progress import progress
from jaxeval.run.resumable import map_journaled


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
    log_prompts: each output also holds its prompt's text (`prompt`; the caller moves it to the
    samples file).
    Returns jaxeval's results (results.py) plus `prompting` and per-record `outputs`.
    """
    check_limit(limit, "limit")
    chosen = check_datasets(datasets if datasets is not None else (E_DATASETS if e else DATASETS), e)
    budget, budget_source = resolve_max_length(max_length, backend)
    resolved_format = resolve_chat_format(chat_format, tokenizer, CHAT_FORMATS)
    benchmark = benchmark_name(e)

    # every dataset is loaded and checked before the first generation: bad or empty data stops the run early
    every = {dataset: load_config(data, config_name(dataset, e)) for dataset in chosen}
    loaded: dict[str, list[LongBenchRecord]] = {dataset: limited(records, limit) for dataset, records in every.items()}
    rows: dict[str, list[PredictionRow]] = {}
    outputs: dict[str, list[dict]] = {}
    for dataset in chosen:
        records = loaded[dataset]
        requests = [build_request(record, tokenizer, budget, resolved_format, benchmark)
                    for record in progress(records, desc=f"{benchmark} {dataset} tokenization", unit="record")]
        # journal batches of one length bucket each (longest first), so each is one engine batch
        order = bucket_order([len(r.prompt_ids) for r in requests], requests[0].max_new_tokens) if requests else []
        generated = map_journaled(
            journal, ["/".join(map(str, requests[i].key)) + "/0" for i in order],
            lambda batch: [{"pred": pred} for pred in generate_predictions(
                backend, tokenizer, [requests[order[n]] for n in batch], batch_size or len(batch))],
            batch_size=batch_size or len(requests), desc=f"{benchmark} {dataset} generation", unit="sample")
        predictions: list[str] = [""] * len(requests)
        for i, record in zip(order, generated):
            predictions[i] = record["pred"]
        rows[dataset] = [PredictionRow(pred=prediction, answers=record.answers, all_classes=record.all_classes,
                                       length=record.length, origin=record.origin)
                         for record, prediction in zip(records, predictions)]
        outputs[dataset] = [{"key": list(request.key), "pred": prediction, "raw_output": prediction,
                             "target": list(record.answers),
                             **prompt_fields(prompt_text(tokenizer, request.prompt_ids), len(request.prompt_ids),
                                             log_prompts),  # the text only for --log_samples_prompts
                             "raw_prompt_tokens": request.raw_prompt_tokens,
                             "truncated": request.truncated, "chat_format": request.chat_format,
                             "length": record.length}  # the record's own length (LongBench-E's buckets)
                            for request, prediction, record in zip(requests, predictions, records)]
        if predictions_dir is not None:
            write_prediction_file(Path(predictions_dir) / f"{dataset}.jsonl", rows[dataset])

    result = score_datasets(rows, e, options)
    for dataset, per_sample in result["sample_scores"].items():
        for output, score in zip(outputs[dataset], per_sample):
            output["score"] = score
    result["prompting"] = {
        "data": str(data),
        "max_length": budget,
        "max_length_source": budget_source,
        "chat_format": resolved_format,
        "chat_format_requested": chat_format,
        "chat_template_skipped_for": [name for name in chosen if TASKS[name].skip_chat_template],
        "samsum_stop": "token ids (EOS, newline) with min_new_tokens=1",
        "truncated": {name: sum(o["truncated"] for o in outputs[name]) for name in chosen},
        "limit": limit,
    }
    result["outputs"] = outputs
    result["records_before_limit"] = {dataset: len(records) for dataset, records in every.items()}
    return result
