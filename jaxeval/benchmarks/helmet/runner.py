"""HelmetTask and run_helmet: prepare, generate, score every EvalUnit on the sample loop; resumable through the run journal.

Generation (HELMET's model_utils.py HF generate; docs/provenance.md#helmet, quirk P1):
max_new_tokens = G, greedy unless told otherwise, stopping only at
the model's end-of-sequence ids: no newline stop, ever (the configs' `stop_new_line` never
reached upstream's model). Outputs are the generated tokens decoded with special tokens skipped;
in completion mode the rendered answer prefix is prepended before scoring.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Sequence

import jaxeval.benchmarks.helmet.judging as judging
from jaxeval.benchmarks.base import check_limit, prompt_fields, prompt_text, run_standalone
from jaxeval.benchmarks.loop import Done, Generate, Generated, Group, Sample, Task
from jaxeval.benchmarks.helmet.data import resolve_data_root
from jaxeval.benchmarks.helmet.depth import needle_depth
from jaxeval.benchmarks.helmet.metrics import default_post_process
from jaxeval.benchmarks.helmet.prepare import prepare_unit, saved_fields
from jaxeval.benchmarks.helmet.scoring import average_metrics, collect, headline, score_alce, score_item
from jaxeval.benchmarks.helmet.tasks import SAMPLE_DIR, EvalUnit, dataset_key, family
from jaxeval.generation import GenerationOptions, require_tokenizer, token_count


@dataclasses.dataclass(frozen=True)
class GenerationSettings:
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 42
    shots: int | None = None  # None: the config's
    generation_max_length: int | None = None  # None: the config's G


HELMET_SETTINGS = GenerationSettings()


def score_records(dataset: str, records: list[dict], nli=None) -> tuple[list[dict], dict, dict]:
    """(records with metrics and parsed_output, averaged metrics, notes)."""
    notes: dict = {}
    if family(dataset) == "alce":
        per_item, notes = score_alce(dataset, records, nli=nli)
        scored = []
        for record, metrics in zip(records, per_item):
            extra = {}
            answer = record.get("answer")
            if isinstance(answer, str) or (isinstance(answer, list) and answer):
                # eval.py runs its default post-process on ALCE items too (against their `answer`)
                # before eval_alce: those per-item metrics and averages are in HELMET's .json
                default, extra = default_post_process(record["output"], answer)
                metrics.update(default)
            scored.append(dict(record, **extra, **metrics))
            # eval.py's input_len / output_len averages
            metrics.update({k: record[k] for k in ("input_len", "output_len") if isinstance(record.get(k), int)})
        return scored, average_metrics(per_item, unscaled=("num_preds", "length")), notes
    num_candidates = len(records[0]["qrel"]) if family(dataset) == "rerank" and records else None
    scored, per_item = [], []
    for i, record in enumerate(records):
        metrics, extra = score_item(dataset, record, num_candidates, where=f"{dataset} item {i}")
        lengths = {k: record[k] for k in ("input_len", "output_len") if isinstance(record.get(k), int)}
        per_item.append({**metrics, **lengths})
        scored.append({**record, **extra, **metrics})
    return scored, average_metrics(per_item), notes


def judge_dataset(dataset: str, records: list[dict], judge, *, agenticlu: bool = False,
                  agenticlu_prompt: str | Path | None = None) -> tuple[dict, list[dict], dict] | None:
    """The judged headline of a dataset ({name: summary}), per-item judgements and upstream's
    own averaged names ("gpt-4-score", "gpt-4-f1", ...), or None when the dataset has no judged
    score (and this is not an AgenticLU run). judge None: the judgements HELMET saved in the
    items ("gpt-4-scores" of its *-gpt4eval_o.json files), when there are any."""
    fam = family(dataset)
    if agenticlu:
        if judge is None:
            return None
        got = judging.agenticlu_judgements(records, judge, agenticlu_prompt, where=dataset)
        return {"accuracy": {**judging.summarize_judgements(got), "max_tokens_sent": getattr(judge, "max_tokens", None)}}, \
            got, {}
    if fam not in ("narrativeqa", "infbench_sum_eng", "multi_lexsum"):
        return None
    if judge is None:
        got = judging.saved_judgements(fam, records)
        if got is None:
            return None
    elif fam == "narrativeqa":
        got = judging.longqa_judgements(records, judge, where=dataset)
    else:
        got = judging.summ_judgements(records, judge, book=fam == "infbench_sum_eng", where=dataset)
    summaries, raw = judging.longqa_summary(got) if fam == "narrativeqa" else judging.summ_summary(got)
    if judge is not None:  # the reply limit the requests carried (LongQA caps the judge's own)
        sent = getattr(judging.longqa_judge(judge) if fam == "narrativeqa" else judge, "max_tokens", None)
        for summary in summaries.values():
            summary["max_tokens_sent"] = sent
    return summaries, got, raw


def apply_judgement(records: list[dict], averages: dict, judged, key: str = "judge") -> dict:
    summaries, per_item, raw = judged
    for record, judgement in zip(records, per_item):
        record[key] = judgement
    averages.update(raw)
    for name, summary in summaries.items():
        if summary["score"] is not None:
            averages[name] = summary["score"]
    return {name: {k: v for k, v in summary.items() if k != "score"} for name, summary in summaries.items()}


class HelmetTask(Task):
    """HELMET (or its AgenticLU subset) on the sample loop: one group per EvalUnit, prepared just
    before it runs (HELMET's selection, then --limit); a sample's record is its saved fields and
    output; each unit is scored (and judged) as soon as it has run."""

    def __init__(self, model, units: Sequence[EvalUnit], data: str | Path = SAMPLE_DIR, *,
                 limit: int | None = None, settings: GenerationSettings = HELMET_SETTINGS, judge=None, nli=None,
                 agenticlu: bool = False, agenticlu_prompt: str | Path | None = None, llama2_tokenizer=None,
                 log_prompts: bool = False, table: Callable[[dict], str] | None = None):
        """table: completes the result (the judges' call summaries) and returns the printed table."""
        require_tokenizer(model, "HELMET")
        check_limit(limit, "limit")
        self.root = resolve_data_root(data)
        self.model, self.units, self.data, self.limit, self.settings = model, units, data, limit, settings
        self.judge, self.nli, self.agenticlu, self.agenticlu_prompt = judge, nli, agenticlu, agenticlu_prompt
        self.llama2_tokenizer, self.log_prompts, self.table = llama2_tokenizer, log_prompts, table

    def groups(self):
        for unit in self.units:
            prepared, _, notes = prepare_unit(unit, self.root, self.model.tokenizer, shots=self.settings.shots,
                                              limit=self.limit,
                                              generation_max_length=self.settings.generation_max_length,
                                              llama2_tokenizer=self.llama2_tokenizer,
                                              key_prefix="agenticlu" if self.agenticlu else "helmet")
            yield Group(f"helmet {unit.dataset} {unit.length}", [Sample(p.key, (p, unit)) for p in prepared],
                        limit=False, info=(unit, notes))

    def request(self, sample: Sample) -> Generate:
        p, unit = sample.item
        settings = self.settings
        return Generate(p.prompt.ids, GenerationOptions(settings.generation_max_length or unit.generation_max_length,
                                                        temperature=settings.temperature, top_p=settings.top_p,
                                                        seed=settings.seed))

    def score(self, sample: Sample, output: Generated) -> dict:
        p, unit = sample.item
        return dict(saved_fields(p.sample, unit.dataset), output=p.prefix + output.text, input_len=len(p.prompt.ids),
                    output_len=token_count(output.generation), raw_input_len=p.prompt.raw_tokens,
                    truncated_context_tokens=p.prompt.removed_context_tokens)

    def finish(self, done: Done) -> tuple[dict, list[dict], list[dict], dict]:
        """(the unit's entry, its scored records, its --log_samples rows, its averaged metrics)."""
        (unit, notes), prepared = done.group.info, [sample.item[0] for sample in done.samples]
        records = [{"key": p.key, **record, "needle_depth": needle_depth(p.sample, unit.dataset)}  # for `report --reference`
                   for p, record in zip(prepared, done.records)]
        texts = [prompt_text(self.model.tokenizer, p.prompt.ids) for p in prepared]
        for p, text, record in zip(prepared, texts, records):  # --log_samples: prompt, target, raw output
            record.update(prompt_fields(text, len(p.prompt.ids)), target=record.get("answer", record.get("qrel")),
                          raw_output=record["output"][len(p.prefix):])  # without the answer prefix HELMET adds
        records, averages, score_notes = score_records(unit.dataset, records, nli=self.nli)
        judged_notes = None
        if self.judge is not None:
            judged = judge_dataset(unit.dataset, records, self.judge, agenticlu=self.agenticlu,
                                   agenticlu_prompt=self.agenticlu_prompt)
            if judged is not None:
                judged_notes = apply_judgement(records, averages, judged)
        sample_log = [{"key": record["key"], "unit": f"{unit.dataset}/{unit.length}", **record,
                       **({"prompt": text} if self.log_prompts else {})} for record, text in zip(records, texts)]
        settings = self.settings
        entry = {"dataset": unit.dataset, "length": unit.length, "config": unit.config,
                 "input_max_length": unit.input_max_length,
                 "generation_max_length": settings.generation_max_length or unit.generation_max_length,
                 "shots": unit.shots if settings.shots is None else settings.shots,
                 "chat_template": unit.use_chat_template, "samples": len(records),
                 "averaged_metrics": averages, "headline": headline(unit.dataset, averages),
                 "notes": {**notes, **score_notes}, "judge": judged_notes}
        return entry, records, sample_log, averages

    def summarize(self, done: list[tuple[dict, list[dict], list[dict], dict]]) -> tuple[dict, str]:
        units_out, table_in, outputs, sample_log = [], {}, {}, []
        for entry, records, rows, averages in done:
            table_in[(entry["dataset"], entry["length"])] = averages
            outputs[f"{entry['dataset']}/{entry['length']}"] = records
            sample_log += rows
            units_out.append(entry)
        judge, nli = self.judge, self.nli
        result = {"benchmark": "agenticlu" if self.agenticlu else "helmet", "data": str(self.data),
                  "limit": self.limit,
                  "generation": {**dataclasses.asdict(self.settings),
                                 "stop": "model end-of-sequence ids only (no newline stop)"},
                  "judge": judge.settings() if judge is not None else None,
                  "nli_judge": nli.settings() if nli is not None else None,
                  "units": units_out, "outputs": outputs, "sample_log": sample_log}
        if self.agenticlu:
            result["accuracy_table"] = agenticlu_table(units_out)
        else:
            result["collect"] = collect(table_in)
        return result, self.table(result) if self.table is not None else ""


def run_helmet(model, units: Sequence[EvalUnit], data: str | Path = SAMPLE_DIR, *, limit: int | None = None,
               settings: GenerationSettings = HELMET_SETTINGS, judge=None, nli=None, agenticlu: bool = False,
               agenticlu_prompt: str | Path | None = None, llama2_tokenizer=None, journal=None,
               batch_size: int = 8, log_prompts: bool = False) -> dict:
    """Generate and score `units`. judge: LongQA / summarisation (or AgenticLU) judge; nli: the
    ALCE citation judge. Datasets whose files are absent from `data` fail with a DataError."""
    task = HelmetTask(model, units, data, limit=limit, settings=settings, judge=judge, nli=nli, agenticlu=agenticlu,
                      agenticlu_prompt=agenticlu_prompt, llama2_tokenizer=llama2_tokenizer, log_prompts=log_prompts)
    return run_standalone(task, "helmet", model,
                          journal=journal, limit=limit, batch_size=batch_size, log_prompts=log_prompts)


def agenticlu_table(units_out: list[dict]) -> dict:
    """dataset -> length -> judged accuracy (%), like the paper's main table (None: not judged)."""
    table: dict = {}
    for unit in units_out:
        summary = (unit["judge"] or {}).get("accuracy")
        value = unit["averaged_metrics"].get("accuracy") if summary is not None else None
        table.setdefault(dataset_key(unit["dataset"]), {})[unit["length"]] = value
    return table
