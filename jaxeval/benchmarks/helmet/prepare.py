"""One EvalUnit's test samples and prompts: load and check the files, select rows and demos,
render the prompt (chat or completion), fit it with the model's tokenizer."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import jaxeval.benchmarks.helmet.samples as S
from jaxeval.benchmarks.base import limited
from jaxeval.benchmarks.helmet.data import load_records, resolve_file
from jaxeval.benchmarks.helmet.tasks import ASSETS, EvalUnit, family
from jaxeval.benchmarks.helmet.templates import Template, template_for
from jaxeval.benchmarks.helmet.truncation import FittedPrompt, fit_prompt, pretruncate
from jaxeval.errors import DataError
from jaxeval.io.inputs import read_json

PRETRUNCATED = ("narrativeqa", "infbench_qa_eng", "infbench_choice_eng", "infbench_sum_eng", "multi_lexsum")
# Fields never saved with an output (long; the prompt is reproducible from the data).
DROPPED_FIELDS = ("context", "ctxs", "demos", "demo", "demo_text", "instruction", "input_ids", "_origin")


@dataclasses.dataclass
class PreparedSample:
    key: str  # journal key
    sample: dict  # HELMET's test item (context possibly shortened)
    prompt: FittedPrompt
    prefix: str  # rendered answer prefix, prepended to completion-mode outputs


def _alce_prompt_file(unit: EvalUnit, root: Path) -> dict:
    # demo_files of ALCE are prompt files shipped with HELMET (prompts/*.json), also in jaxeval's assets
    for path in (root / unit.demo_file, ASSETS / unit.demo_file):
        if path.is_file():
            return read_json(path)
    raise DataError(f"{unit.demo_file}: ALCE prompt file not found under {root} or jaxeval's assets")


def select_samples(unit: EvalUnit, root: Path, shots: int, llama2_tokenizer=None) -> tuple[list[dict], dict]:
    """HELMET's test items of a unit and notes on how they were made."""
    fam, n, notes = family(unit.dataset), unit.max_test_samples, {}
    if fam in ("json_kv", "ruler", "rag", "rerank", "alce"):
        records = load_records(resolve_file(root, unit.test_file), fam, unit.dataset)
    else:
        records = load_records(resolve_file(root, f"prepared/{unit.dataset}.jsonl"), fam, unit.dataset)
    if fam == "json_kv":
        return S.json_kv_samples(records, shots, n), notes
    if fam == "ruler":
        return S.ruler_samples(records, n), notes
    if fam in ("rag", "rerank"):
        demos = load_records(resolve_file(root, unit.demo_file), fam, unit.dataset) if shots > 0 else []
        if fam == "rag":
            return S.rag_samples(records, demos, unit.dataset, shots, n), notes
        return S.rerank_samples(records, demos, shots, n), notes
    if fam == "alce":
        return S.alce_samples(records, _alce_prompt_file(unit, root), unit.dataset, shots, n), notes
    rows = S.prepared_samples(records, n)
    if fam in PRETRUNCATED:
        max_tokens = int(unit.dataset.rsplit("_", 1)[-1])
        if llama2_tokenizer is not None:
            cut = [pretruncate(r["context"], llama2_tokenizer, max_tokens) for r in rows]
            rows = [dict(r, context=c) for r, (c, _) in zip(rows, cut)]
            notes["pretruncated"] = sum(t for _, t in cut)
        notes["pretruncation"] = ("to %d tokens of the given Llama-2 tokenizer" % max_tokens if llama2_tokenizer
                                  else "none here: the prepared file's contexts are used as they are")
    if shots == 0:
        rows = [dict(r, demo="", demos="") for r in rows]
    return rows, notes


def item_id(sample: dict, index: int) -> str:
    for name in ("id", "qid", "_id"):
        if isinstance(sample.get(name), (str, int)):
            return str(sample[name])
    return f"row{index}"


def prepare_unit(unit: EvalUnit, root: Path, tokenizer, *, shots: int | None = None, limit: int | None = None,
                 generation_max_length: int | None = None, llama2_tokenizer=None,
                 key_prefix: str = "helmet") -> tuple[list[PreparedSample], Template, dict]:
    """Prepared samples of a unit (the first `limit`, or that fraction rounded up, after HELMET's own
    selection; notes["samples_before_limit"] counts them before)."""
    shots = unit.shots if shots is None else shots
    gen = generation_max_length or unit.generation_max_length
    rows, notes = select_samples(unit, root, shots, llama2_tokenizer)
    notes["samples_before_limit"] = len(rows)
    rows = limited(rows, limit)
    template = template_for(unit.dataset)
    seen: Counter[str] = Counter()
    prepared = []
    for index, row in enumerate(rows):
        ident = item_id(row, index)
        where = f"{row.get('_origin', unit.test_file)} ({unit.dataset} {unit.length})"
        fitted, shortened = fit_prompt(tokenizer, template, row, unit.use_chat_template, unit.input_max_length,
                                       gen, where=where)
        prefix = "" if unit.use_chat_template else template.system_text(shortened)
        prepared.append(PreparedSample(f"{key_prefix}/{unit.dataset}/{unit.length}/{ident}/{seen[ident]}",
                                       shortened, fitted, prefix))
        seen[ident] += 1
    notes["truncated"] = sum(1 for p in prepared if p.prompt.removed_context_tokens)
    return prepared, template, notes


def saved_fields(sample: dict, dataset: str) -> dict:
    """The sample's fields kept with its output (ALCE keeps the shown docs for citation scoring)."""
    kept = {k: v for k, v in sample.items() if k not in DROPPED_FIELDS and k != "docs"}
    if family(dataset) == "alce":
        kept["docs"] = sample["docs"][:int(dataset.split("_")[-1])]
    return kept
