"""Scoring saved HELMET items (HELMET's output JSON rows or jaxeval's): per-item metrics by
dataset, HELMET's averages (x100 except *_len), the headline per dataset, and the category and
overall scores as scripts/collect_results.py computes them.

An item holds at least `output` (in completion mode already prefixed with the rendered answer
prefix, as HELMET saves it) and the gold fields of its dataset (answer; qrel for re-rank;
qa_pairs / answers and docs for ALCE).
"""

from __future__ import annotations

import math

import numpy as np
from typing import Sequence

import jaxeval.benchmarks.helmet.alce as alce
from jaxeval.benchmarks.helmet.metrics import (
    choice_post_process, default_post_process, icl_post_process, json_kv_post_process, ruler_post_process,
)
from jaxeval.benchmarks.helmet.rerank import rerank_post_process
from jaxeval.benchmarks.helmet.tasks import CATEGORIES, category, dataset_key, family
from jaxeval.errors import DataError

# Headline measures per dataset key, as collect_results picks them; judged ones come from judging.py.
HEADLINE = {
    "json_kv": ("substring_exact_match",), "ruler_niah_mk_2": ("ruler_recall",), "ruler_niah_mk_3": ("ruler_recall",),
    "ruler_niah_mv": ("ruler_recall",), "kilt_nq": ("substring_exact_match",),
    "kilt_triviaqa": ("substring_exact_match",), "kilt_hotpotqa": ("substring_exact_match",),
    "kilt_popqa_3": ("substring_exact_match",), "msmarco_rerank_psg": ("NDCG@10",),
    "alce_asqa": ("str_em", "citation_rec", "citation_prec"),
    "alce_qampari": ("qampari_rec_top5", "citation_rec", "citation_prec"),
    "narrativeqa": ("gpt4_score",), "infbench_qa_eng": ("rougeL_f1",), "infbench_choice_eng": ("exact_match",),
    "infbench_sum_eng": ("gpt4_f1",), "multi_lexsum": ("gpt4_f1",),
    "icl_trec_coarse": ("exact_match",), "icl_trec_fine": ("exact_match",), "icl_banking77": ("exact_match",),
    "icl_clinic150": ("exact_match",), "icl_nlu": ("exact_match",),
}
# collect_results' custom_avgs, in its column order (the order of the float sums, so it matters for
# exact equality): RAG is nq, hotpotqa, popqa, triviaqa; the overall score averages Recall, RAG,
# ICL, Cite, Re-rank, LongQA, Summ.
CATEGORY_MEMBERS = {
    "recall": ("json_kv", "ruler_niah_mk_2", "ruler_niah_mk_3", "ruler_niah_mv"),
    "rag": ("kilt_nq", "kilt_hotpotqa", "kilt_popqa_3", "kilt_triviaqa"),
    "rerank": ("msmarco_rerank_psg",),
    "cite": ("alce_asqa", "alce_qampari"),
    "longqa": ("narrativeqa", "infbench_qa_eng", "infbench_choice_eng"),
    "summ": ("infbench_sum_eng", "multi_lexsum"),
    "icl": ("icl_trec_coarse", "icl_trec_fine", "icl_banking77", "icl_clinic150", "icl_nlu"),
}
OVERALL_ORDER = ("recall", "rag", "icl", "cite", "rerank", "longqa", "summ")
assert sorted(OVERALL_ORDER) == sorted(CATEGORIES) and all(
    category(k) == c for c, keys in CATEGORY_MEMBERS.items() for k in keys) and sorted(
    k for keys in CATEGORY_MEMBERS.values() for k in keys) == sorted(HEADLINE)


def _gold(item: dict, where: str):
    gold = item.get("answer")
    if not (isinstance(gold, str) or (isinstance(gold, list) and gold)):
        raise DataError(f"{where}: field 'answer' missing or not a string / non-empty list")
    return gold


def score_item(dataset: str, item: dict, num_candidates: int | None = None, where: str = "item") -> tuple[dict, dict]:
    """(metrics, extra fields such as parsed_output) of one non-ALCE item."""
    if not isinstance(item.get("output"), str):
        raise DataError(f"{where}: field 'output' missing or not a string")
    fam, output = family(dataset), item["output"]
    if fam == "rerank":
        if not isinstance(item.get("qrel"), list):
            raise DataError(f"{where}: field 'qrel' missing or not a list of [id, label]")
        return rerank_post_process(output, item["qrel"], num_candidates or len(item["qrel"]))
    gold = _gold(item, where)
    if fam == "json_kv":
        return json_kv_post_process(output, gold)
    if fam == "ruler" and "qa" not in dataset:  # RULER qa_1 / qa_2 use the default post-process
        return ruler_post_process(output, gold)
    if fam == "infbench_choice_eng":
        if not (isinstance(gold, list) and len(gold) == 2):
            raise DataError(f"{where}: field 'answer' must be [letter, 'letter. option'] for {dataset}")
        return choice_post_process(output, gold)
    if fam == "icl":
        return icl_post_process(output, gold)
    if fam == "multi_lexsum":  # upstream's own post-process parses after its system template "Summary:"
        return default_post_process(output, gold, prefix="Summary:")
    return default_post_process(output, gold)


def score_alce(dataset: str, items: Sequence[dict], nli=None, where: str = "items") -> tuple[list[dict], dict]:
    """Per-item ALCE metrics (fractions) and notes; citation scores only when an NLI judge is given."""
    qampari = "qampari" in dataset
    checker = alce.NLIChecker(nli) if nli is not None and "nocite" not in dataset else None
    split, splitter_name = alce.sentence_splitter() if checker and not qampari else (None, None)
    per_item = []
    for i, item in enumerate(items):
        w = f"{where} item {i}"
        if not isinstance(item.get("output"), str):
            raise DataError(f"{w}: field 'output' missing or not a string")
        if qampari:
            if "answers" not in item:
                raise DataError(f"{w}: field 'answers' missing")
            # eval_alce's compute_str_em gives 0 / 0 when the items have no qa_pairs (QAMPARI)
            metrics = {"str_em": 0.0, "str_hit": 0.0, **alce.qampari_scores(item["output"], item["answers"])}
        else:
            if "qa_pairs" not in item:
                raise DataError(f"{w}: field 'qa_pairs' missing")
            str_em = alce.asqa_str_em(item["output"], item["qa_pairs"])
            metrics = {"str_em": str_em, "str_hit": float(str_em == 1)}
        metrics["length"] = alce.output_length(item["output"])
        if checker is not None:
            if "docs" not in item:
                raise DataError(f"{w}: field 'docs' missing (citation scoring needs the documents)")
            try:
                # all the item's docs, as upstream: HELMET saves the whole retrieved list (not only the
                # shown ones), so a citation beyond the shown docs is judged against that doc
                cite = alce.citation_scores(item["output"], item["docs"], checker, split,
                                            question=item["question"] if qampari else None)
            except alce.JudgeFailed:
                cite = {"citation_rec": None, "citation_prec": None, "judge_failed": True}
            if cite is not None:
                metrics.update(cite)
        per_item.append(metrics)
    notes = {"nli_calls": checker.calls if checker else 0,
             "judge_failures": len(checker.failures) if checker else 0,
             "citation": "scored" if checker else "not scored (no NLI judge given)"}
    if splitter_name:
        notes["sentence_splitter"] = splitter_name
    return per_item, notes


def average_metrics(per_item: Sequence[dict], unscaled: Sequence[str] = ()) -> dict:
    """HELMET's averaged_metrics: mean x 100 (fields with "_len" in the name, and `unscaled`
    ones such as ALCE's num_preds, unscaled); items whose value is None (failed judgement) or
    absent (ALCE: no sentence) are left out of that field's mean."""
    names = []
    for metrics in per_item:
        names += [k for k in metrics if k not in names and not isinstance(metrics[k], (dict, list, str))]
    out = {}
    for name in names:
        values = [float(m[name]) for m in per_item if m.get(name) is not None]
        if values:
            # numpy's (pairwise) mean, then the factor, as HELMET: the last digit depends on the order
            out[name] = float(np.mean(np.asarray(values, dtype=np.float64))) * (
                1 if "_len" in name or name in unscaled else 100)
    return out


def headline(dataset: str, averages: dict) -> dict[str, float | None]:
    return {name: averages.get(name) for name in HEADLINE.get(dataset_key(dataset), ())}


def _mean(values):
    return sum(values) / len(values) if values else None


def collect(results: dict[tuple[str, str], dict]) -> dict:
    """Category averages and the overall score per length.

    results: (dataset, length label) -> averaged metrics (judge scores included under gpt4_score /
    gpt4_f1). A category is the mean of its members' headline values (Cite: all six); it is
    marked incomplete, with what is missing, when a member has no value; the overall score (mean
    of the seven categories) is given only when all seven are complete.
    """
    by_length: dict[str, dict] = {}
    for (dataset, length), averages in results.items():
        by_length.setdefault(length, {})[dataset_key(dataset)] = averages
    table = {}
    for length, per_key in sorted(by_length.items(), key=lambda kv: _length_order(kv[0])):
        cats = {}
        for cat, members in CATEGORY_MEMBERS.items():
            values, missing = [], []
            for key in members:
                for measure in HEADLINE[key]:
                    value = per_key.get(key, {}).get(measure)
                    (missing.append(f"{key}:{measure}") if value is None else values.append(value))
            if any(key in per_key for key in members):
                cats[cat] = {"score": _mean(values), "complete": not missing, "missing": missing}
        ordered = [cats[c] for c in OVERALL_ORDER if c in cats]
        complete = [c["score"] for c in ordered if c["complete"]]
        # collect_results itself (pandas' mean, NaN skipped) averages whatever is present: kept
        # alongside, while "overall" stays None until all seven categories are complete
        present = [c["score"] for c in ordered if c["score"] is not None]
        table[length] = {"categories": cats,
                         "overall": _mean(complete) if len(complete) == len(CATEGORIES) else None,
                         "overall_as_collect_results": _mean(present)}
    return table


def _length_order(label: str) -> float:
    return float(label[:-1]) if label.endswith("k") and label[:-1].isdigit() else math.inf
