"""run_agent_bench: load, read, score every requested config and length; the card's output.

Output: `rows` (the card's headline rows, in its order and wording, for the sets that were
run), `sets` (every metric per config and length, with counts), `reference` (what the rules
configs were compared with), `mode` (what was actually used: "text", "stored_ids" or
"mixed"), `tokens` (rules configs: tokens run vs the naive count), plus `mode_requested` and
`mode_notes` (why auto fell back to text), `sample_log` (one dict per facts / tool_calls item).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.agent_bench.align import MODES, TEXT_MODE
from jaxeval.benchmarks.base import RunContext, check_limit, limited, prompt_fields
from jaxeval.benchmarks.agent_bench.data import CONFIGS, SPLITS, load_split
from jaxeval.benchmarks.agent_bench.facts import (
    ItemOutcome, QueryOutcome, align_item, check_length, facts_metrics, facts_outcome,
)
from jaxeval.benchmarks.agent_bench.span_reads import span_read, spans_of
from jaxeval.benchmarks.agent_bench.schema import RULE_LANGS
from jaxeval.benchmarks.agent_bench.tool_calls import (
    ToolItemOutcome, ToolTargetOutcome, align_spans, tool_calls_metrics, tool_calls_outcome,
)
from jaxeval.benchmarks.agent_bench.vocabulary import auto_mode_note
from jaxeval.errors import ConfigError, DataError
from jaxeval.benchmarks.loop import Group, Read, Sample, Task, read_rows, run_groups

# configs read one text per item: config -> (align an item, its outcome from the spans read, metrics of one split)
SINGLE_READ_CONFIGS = {
    "facts": (align_item, facts_outcome, facts_metrics),
    "tool_calls": (lambda tokenizer, item, mode: align_spans(tokenizer, item.text, item.stored_ids,
                                                              [t.char for t in item.targets], mode),
                   tool_calls_outcome, tool_calls_metrics),
}
RULES_CONFIGS = tuple(RULE_LANGS)
# config -> (item outcome, its field of per-target outcomes, their type): journal records back to outcomes
OUTCOME_TYPES = {"facts": (ItemOutcome, "queries", QueryOutcome),
                 "tool_calls": (ToolItemOutcome, "targets", ToolTargetOutcome)}


def outcome_from_record(config: str, record: dict):
    """The outcome a journal record holds; a record of another jaxeval version is an error, not
    a silently defaulted field."""
    outcome_type, field, target_type = OUTCOME_TYPES[config]
    for kind, fields in ((outcome_type, set(record)), *((target_type, set(t)) for t in record[field][:1])):
        if fields != {f.name for f in dataclasses.fields(kind)}:
            raise DataError(f"agent_bench {config}: a journal record ({record.get('item_id')!r}) was written by "
                            f"another jaxeval version ({kind.__name__} fields differ); move the journal away")
    return outcome_type(**{**record, field: tuple(target_type(**target) for target in record[field])})


def item_key(config: str, split: str, item_id: str) -> str:
    """The item's journal and samples key."""
    return f"agent_bench/{config}/{split}/{item_id}/0"


class SingleReads(Task):
    """The facts / tool_calls items on the sample loop: one teacher-forced read per item with every
    aligned target's tokens (none where nothing aligned); the record is the item's outcome."""

    def __init__(self, backend, tokenizer, mode: str):
        self.backend, self.tokenizer, self.mode = backend, tokenizer, mode
        self.aligned: dict[str, tuple] = {}  # by key: (alignment, note, read request)

    @staticmethod
    def group(config: str, split: str, items) -> Group:
        return Group(f"agent_bench {config}/{split} reads", [Sample(item_key(config, split, item.id), item)
                                                              for item in items], info=(config, split))

    def request(self, sample: Sample) -> Read | None:
        config, split = sample.key.split("/")[1:3]
        alignment, note = SINGLE_READ_CONFIGS[config][0](self.tokenizer, sample.item, self.mode)
        check_length(self.backend, len(alignment.ids), config, split, sample.item.id)
        request = span_read(alignment.ids, alignment.span_positions)
        self.aligned[sample.key] = (alignment, note, request)
        return request

    def score(self, sample: Sample, output) -> dict:
        config = sample.key.split("/")[1]
        alignment, note, request = self.aligned.pop(sample.key)
        spans = spans_of(alignment.span_positions, request, output)
        return dataclasses.asdict(SINGLE_READ_CONFIGS[config][1](sample.item, alignment, note, spans))


def read_items(backend, tokenizer, config: str, split: str, items, mode: str, journal=None,
               batch_size: int = 1) -> list:
    """The outcome of every item of a single-read config, through the sample loop: batch_size items
    per journal batch and read step (read together where the backend batches; a batch cut short
    leaves none of its items), shared between hosts, progress shown."""
    ctx = RunContext("agent_bench", backend, journal, batch_size=batch_size, read_rows=batch_size)
    (done,) = run_groups(ctx, SingleReads(backend, tokenizer, mode), [SingleReads.group(config, split, items)])
    return [outcome_from_record(config, record) for record in done.records]


def score_facts_item(backend, tokenizer, item, split: str, mode: str = "auto") -> ItemOutcome:
    """Read the item once with every aligned answer token as a target, and score its queries."""
    return read_items(backend, tokenizer, "facts", split, [item], mode)[0]


def score_tool_calls_item(backend, tokenizer, item, split: str, mode: str = "auto") -> ToolItemOutcome:
    return read_items(backend, tokenizer, "tool_calls", split, [item], mode)[0]


@dataclasses.dataclass(frozen=True)
class HeadlineRow:
    title: str  # the card's wording
    config: str
    split: str  # "8k", "32k", or "8k+32k" for a worst case over both lengths
    metric: str  # key in sets[config][split], or "worst_retained" (lowest retained over the cells)


# In the card's order and wording.
HEADLINE_ROWS = (
    HeadlineRow("Facts recalled at 8k tokens", "facts", "8k", "query_accuracy"),
    HeadlineRow("Facts recalled at 32k tokens", "facts", "32k", "query_accuracy"),
    HeadlineRow("Distant tool calls at 8k tokens", "tool_calls", "8k", "far_accuracy"),
    HeadlineRow("Distant tool calls at 32k tokens", "tool_calls", "32k", "far_accuracy"),
    HeadlineRow("Rules followed at 8k tokens", "rules_en", "8k", "follow"),
    HeadlineRow("Rules followed at 32k tokens", "rules_en", "32k", "follow"),
    HeadlineRow("Rules kept far back, worst case (1.00 = as the original)", "rules_en", "8k+32k",
                "worst_retained"),
    HeadlineRow("Czech rules kept far back, worst case", "rules_cs", "8k+32k", "worst_retained"),
    HeadlineRow("German rules kept far back, worst case", "rules_de", "8k+32k", "worst_retained"),
    HeadlineRow("Rules in Czech followed at 32k tokens", "rules_cs", "32k", "follow"),
    HeadlineRow("Rules in German followed at 32k tokens", "rules_de", "32k", "follow"),
)


def _check_choice(kind: str, chosen: Sequence[str], available: Sequence[str]) -> None:
    for name in chosen:
        if name not in available:
            raise DataError(f"unknown {kind} '{name}'; available: {', '.join(available)}")


def run_agent_bench(backend, tokenizer, data: str | Path, sets: Sequence[str] = ("facts",),
                    lengths: Sequence[str] = ("8k", "32k"), limit: int | None = None,
                    mode: str = "auto", save_scores: str | Path | None = None,
                    reference_scores: str | Path | None = None, journal=None, log_prompts: bool = False,
                    batch_size: int = 1) -> dict:
    """Score `backend` (anything with read(ids, positions, tokens)) on longctx-agent-bench.

    data: a local folder in the hub layout or a hub id. sets: configs of the card. lengths:
    "8k", "32k". limit: the first N items per config and length (or that fraction, 0 < limit < 1). mode: "auto" (stored qwen_*
    ids when the tokenizer is the dataset's declared one, jaxeval.benchmarks.agent_bench.vocabulary, and the ids
    are present and consistent; else text) or "text". save_scores: a .json.gz file to
    store every rules target's two scores in (the reference of a later run);
    reference_scores: such a file, read back as the reference of the rules configs.
    journal: get(key)/put(key, record) store of finished items (jaxeval/run/journal.py).
    log_prompts: each --log_samples row also holds the text read.
    batch_size: texts read together (one length bucket per step) where the backend batches;
    the results are those of one read at a time (float32 noise apart).
    """
    ctx = RunContext("agent_bench", backend, journal, limit=limit, batch_size=batch_size, read_rows=batch_size,
                     log_prompts=log_prompts)
    return agent_bench_result(ctx, tokenizer, data, sets, lengths, mode, save_scores, reference_scores)


def agent_bench_result(ctx: RunContext, tokenizer, data: str | Path, sets: Sequence[str], lengths: Sequence[str],
                       mode: str = "auto", save_scores: str | Path | None = None,
                       reference_scores: str | Path | None = None) -> dict:
    """run_agent_bench on a RunContext: facts / tool_calls through the sample loop, the rules
    configs through their own prefix-shared reads (rules_run.py: every sequence of a session at
    once, not one request per sample)."""
    backend, limit, journal, log_prompts = ctx.model, ctx.limit, ctx.journal, ctx.log_prompts
    sets, lengths = tuple(sets), tuple(lengths)
    _check_choice("set", sets, CONFIGS)
    _check_choice("length", lengths, SPLITS)
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}'; available: {', '.join(MODES)}")
    check_limit(limit, "limit")

    # every split is loaded and checked before the first read: bad or empty data stops the run early
    every = {(config, split): load_split(data, config, split) for config in sets for split in lengths}
    loaded = {where: limited(items, limit) for where, items in every.items()}
    results: dict[str, dict[str, dict]] = {}
    notes: list[str] = []
    read_mode = mode
    if mode == "auto":  # stored ids only for the tokenizer the dataset declares (vocabulary.py)
        vocabulary_note = auto_mode_note(tokenizer, data, [items[0] for items in loaded.values() if items])
        if vocabulary_note is not None:
            notes.append(vocabulary_note)
            read_mode = TEXT_MODE
    samples: list[dict] = []  # per item of facts / tool_calls, per target of the rules (--log_samples)
    single = [(config, split) for config in sets if config in SINGLE_READ_CONFIGS for split in lengths]
    done = run_groups(ctx, SingleReads(backend, tokenizer, read_mode),
                      [SingleReads.group(config, split, every[(config, split)]) for config, split in single])
    for (config, split), group in zip(single, done):
        items = group.samples
        outcomes = [outcome_from_record(config, record) for record in group.records]
        samples.extend({"key": item_key(config, split, o.item_id), "config": config, "split": split,
                        **prompt_fields(item.item.text, o.tokens_read, log_prompts),  # prompt_tokens: tokens read
                        "target": [getattr(t, "answer", None) or getattr(t, "target", None)
                                   for t in item.item.targets],
                        **dataclasses.asdict(o)} for item, o in zip(items, outcomes))
        results.setdefault(config, {})[split] = SINGLE_READ_CONFIGS[config][2](outcomes)
        for outcome in outcomes:
            if outcome.mode_note:
                note = f"{config}/{split}: {outcome.mode_note}"
                if note not in notes:
                    notes.append(note)
    output = {"reference": None, "mode_requested": mode}
    rules_sets = [c for c in sets if c in RULES_CONFIGS]
    if rules_sets:
        from jaxeval.benchmarks.agent_bench.rules_run import run_rules

        rules = run_rules(backend, tokenizer, {(c, s): loaded[(c, s)] for c in rules_sets for s in lengths},
                          read_mode, save_scores=save_scores, reference_scores=reference_scores, journal=journal,
                          log_prompts=log_prompts, batch_size=read_rows(ctx))
        for config in rules_sets:
            results[config] = rules["sets"][config]
        notes.extend(rules["notes"])
        samples.extend(rules["samples"])
        output["reference"] = rules["reference"]
        output["tokens"] = rules["tokens"]
    used = {metrics["mode"] for splits in results.values() for metrics in splits.values()} - {None}
    return {
        "rows": headline_rows(results),
        "sets": results,
        **output,
        "mode": used.pop() if len(used) == 1 else ("mixed" if used else None),
        "mode_notes": notes,
        "sample_log": samples,
        "items_before_limit": {f"{config}/{split}": len(items) for (config, split), items in every.items()},
    }


def headline_rows(sets: dict[str, dict[str, dict]]) -> list[dict]:
    """The card's headline rows whose config and length were run, in the card's order.

    A worst-case row takes the lowest non-null retained over the cells (3 families x 2
    placements) of the lengths that were run; its `split` names them.
    """
    rows = []
    for row in HEADLINE_ROWS:
        splits = sets.get(row.config, {})
        if row.metric == "worst_retained":
            run = [split for split in SPLITS if split in splits]
            if not run:
                continue
            cells = [cell for split in run for cell in splits[split]["cells"].values()
                     if cell["placement"] != "all" and cell["family"] != "all"]
            values = [cell["retained"] for cell in cells if cell["retained"] is not None]
            rows.append({"row": row.title, "value": min(values) if values else None, "config": row.config,
                         "split": "+".join(run), "metric": row.metric, "cells": len(cells),
                         "scored": sum(cell["counted"] for cell in cells),
                         "total": sum(cell["targets"] for cell in cells)})
        elif row.split in splits:
            metrics = splits[row.split]
            scored, total = _row_counts(row, metrics)
            rows.append({"row": row.title, "value": _metric(metrics, row.metric), "config": row.config,
                         "split": row.split, "metric": row.metric, "scored": scored, "total": total})
    return rows


def _metric(metrics: dict, metric: str):
    if metric == "follow":  # the rules rows: rules in the system prompt, all families
        return metrics["cells"]["system/all"]["follow"]
    return metrics[metric]


def _row_counts(row: HeadlineRow, metrics: dict) -> tuple[int, int]:
    if row.config == "facts":
        return metrics["scored"], metrics["queries"]
    if row.config == "tool_calls":
        return metrics["far_scored"], metrics["far_targets"]
    cell = metrics["cells"]["system/all"]
    return cell["counted"], cell["targets"]


def format_rows_table(result: dict) -> str:
    """The headline rows as an aligned terminal table (values to two decimals, n/a if none)."""
    header = ("row", "value", "from", "scored")
    lines = []
    for row in result["rows"]:
        lines.append((row["row"], "n/a" if row["value"] is None else f"{row['value']:.2f}",
                      f"{row['config']}/{row['split']}", f"{row['scored']} of {row['total']}"))
    widths = [max(len(cells[i]) for cells in (header, *lines)) for i in range(len(header))]

    def render(cells: Sequence[str]) -> str:
        left, value, *rest = cells
        return "  ".join([f"{left:<{widths[0]}}", f"{value:>{widths[1]}}",
                          *(f"{cell:<{width}}" for cell, width in zip(rest, widths[2:]))]).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *(render(cells) for cells in lines), *_row_notes(result["rows"])])


def _row_notes(rows) -> list[str]:
    """Why a row is n/a, said under the table (the reason is otherwise only in the results JSON)."""
    from jaxeval.benchmarks.agent_bench.rules import COUNTED_EFFECT

    notes = []
    for row in rows:
        if row["value"] is not None:
            continue
        if not row["total"]:
            notes.append(f"n/a {row['row']}: {row['config']}/{row['split']} holds no targets of this kind")
        elif not row["scored"]:
            notes.append(f"n/a {row['row']}: none of its {row['total']} targets counted (a rule target counts only "
                         f"where the reference scores show the rule moving the answer by >= {COUNTED_EFFECT:g} nat)")
    return notes
