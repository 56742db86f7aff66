"""From validated records to HELMET's test samples: which rows are evaluated, and their demos.

Reproduced randomness (HELMET's data.py loaders and eval.py's random.seed(42) before each
dataset; docs/provenance.md#helmet, quirk P4):
* HF `Dataset.shuffle(seed=s)` is the permutation numpy.random.default_rng(s).permutation(n);
* question keys: Python random.seed(42) then random.sample(sorted(keys), n) (RAG; re-rank
  re-seeds 42 before its own sample); all rows of a chosen key are kept in file order;
* RAG / re-rank demos: seed int(sha256(str(key))) mod 2^31, shuffle, drop repeated keys, first
  `shots`;
* ALCE demos: random.sample(prompt demos, shots) for every record of the file in order, right
  after random.seed(42), then the rows are shuffled (42) and cut. This matches upstream
  whenever nothing else draws from Python's `random` between the seed and the map.
Not reproducible (P4): NarrativeQA / Multi-LexSum demos (unseeded shuffles) and the hub-built
ICL/LongQA/summarisation rows; jaxeval reads those rows, demos included, from prepared files.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Sequence

import numpy as np

from jaxeval.benchmarks.helmet.templates import TEMPLATES
from jaxeval.errors import DataError

SEED = 42


def hf_shuffle(rows: Sequence, seed: int) -> list:
    return [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]


def sha_seed(key) -> int:
    return int(hashlib.sha256(str(key).encode("utf-8")).hexdigest(), 16) % 2**31


def drop_duplicates(rows: Sequence[dict], key: str) -> list[dict]:
    seen, kept = set(), []
    for row in rows:
        if row[key] not in seen:
            seen.add(row[key])
            kept.append(row)
    return kept


def shuffled_head(rows: list[dict], n: int | None, seed: int = SEED) -> list[dict]:
    return rows if n is None else hf_shuffle(rows, seed)[:min(n, len(rows))]


def _sample_keys(rows: list[dict], key: str, n: int | None) -> list[dict]:
    if n is None:
        return rows
    random.seed(SEED)
    keys = set(random.sample(sorted({r[key] for r in rows}), min(n, len({r[key] for r in rows}))))
    return [r for r in rows if r[key] in keys]


def json_kv_samples(records: list[dict], shots: int, n: int | None) -> list[dict]:
    t = TEMPLATES["json_kv"]
    out = []
    for r in records:
        demos = t["demo_separator"].join(t["demo_template"].format(key=k, value=" " + v) for k, v in r["demos"][:shots])
        out.append(dict(r, demos=demos + ("\n\n" if shots > 0 else ""), k=r["num_kvs"]))
    return shuffled_head(out, n)


def ruler_samples(records: list[dict], n: int | None) -> list[dict]:
    out = []
    for r in records:
        question = r["query"] if "query" in r else r.get("question", "")
        example = r["example"] + "\n\n" if r.get("example") else ""
        out.append(dict(r, question=question, example=example, answer=r["answer"] if "answer" in r else r["outputs"]))
    return shuffled_head(out, n)


def _passages(ctxs: Sequence[dict], template: str) -> str:
    return "\n\n".join(template.format(**c) for c in ctxs)


def rag_samples(records: list[dict], demo_records: list[dict], dataset: str, shots: int, n: int | None) -> list[dict]:
    t = TEMPLATES["rag_kilt"]
    if "popqa" in dataset:
        threshold = float(dataset.split("_")[-1])
        records = [r for r in records if math.log10(r["s_pop"]) < threshold]
        demo_records = [r for r in demo_records if math.log10(r["s_pop"]) < threshold]
    key = "id" if records and all("id" in r for r in records) else "question"
    rows = _sample_keys(records, key, n)
    out = []
    for r in rows:
        demo_text = ""
        if shots > 0:
            pool = [d for d in demo_records if d[key] != r[key]] if "popqa" in dataset else demo_records
            demos = drop_duplicates(hf_shuffle(pool, sha_seed(r[key])), key)[:shots]
            if len(demos) < shots:
                raise DataError(f"{r['_origin']}: only {len(demos)} demos available for {shots} shots")
            demo_text = "\n\n".join(t["demo_template"].format(documents=_passages(d["ctxs"], t["passage_template"]),
                                                             question=d["question"], answer=d["answers"][0])
                                    for d in demos) + "\n\n"
        out.append(dict(r, demos=demo_text, context=_passages(r["ctxs"], t["passage_template"]), answer=r["answers"]))
    return out


def rerank_samples(records: list[dict], demo_records: list[dict], shots: int, n: int | None) -> list[dict]:
    t = TEMPLATES["msmarco_rerank_psg"]
    rows = _sample_keys(records, "qid" if all("qid" in r for r in records) else "query", n)
    filtered = len(demo_records) > 2 * len(rows)
    if filtered:
        qids = {r["qid"] for r in rows}
        demo_records = [d for d in demo_records if d["qid"] not in qids]
    out = []
    for r in rows:
        template = t["passage_template_with_title"] if "title" in r["ctxs"][0] else t["passage_template_no_title"]
        demo_text = ""
        if shots > 0:
            pool = demo_records if filtered else [d for d in demo_records if d["qid"] != r["qid"]]
            for d in drop_duplicates(hf_shuffle(pool, abs(sha_seed(r["qid"]))), "qid")[:shots]:
                ranking = " > ".join(c["id"] for c in sorted(d["ctxs"], key=lambda c: c["label"], reverse=True))
                demo_text += _passages(d["ctxs"], template) + f"\n\nQuery: {d['query']}\nRanking: {ranking}" + "\n\n"
        gold = " > ".join(c["id"] for c in sorted(r["ctxs"], key=lambda c: c["label"], reverse=True))
        out.append(dict(r, context=_passages(r["ctxs"], template), question=r["query"], demos=demo_text, answer=gold,
                        qrel=[[c["id"], str(c["label"])] for c in r["ctxs"]]))
    return out


def alce_samples(records: list[dict], prompt_file: dict, dataset: str, shots: int, n: int | None) -> list[dict]:
    num_docs = int(dataset.split("_")[-1])
    doc_prompt, demo_prompt, instruction = prompt_file["doc_prompt"], prompt_file["demo_prompt"], prompt_file["instruction"]

    def docs_text(docs):
        return "\n\n".join(doc_prompt.format(**d, ID=i + 1) for i, d in enumerate(docs))

    random.seed(SEED)
    out = []
    for r in records:
        demo_text = "\n\n\n".join(demo_prompt.format(**d, instruction=instruction, context=docs_text(d["docs"]))
                                  for d in random.sample(prompt_file["demos"], shots))
        if shots > 0:
            demo_text += "\n\n\n"
        out.append(dict(r, context=docs_text(r["docs"][:num_docs]), demo_text=demo_text, instruction=instruction))
    return shuffled_head(out, n)


def prepared_samples(records: list[dict], n: int | None) -> list[dict]:
    """Prepared LongQA / summarisation / ICL rows: file order, the first n; no demo field = no demos."""
    rows = records if n is None else records[:n]
    return [dict(r, demo=r.get("demo", ""), demos=r.get("demos", "")) for r in rows]
