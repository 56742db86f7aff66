"""LongQA and summarisation rows built from the source datasets' rows, as HELMET's data.py
loaders (InfBench, NarrativeQA, Multi-LexSum; docs/provenance.md#helmet) build them, with the Llama-2 tokenizer (meta-llama/Llama-2-7b-hf) passed in.

* InfBench (longbook_qa_eng / longbook_choice_eng / longbook_sum_eng rows: id, context, input,
  answer, options): MC options rendered A-D and the gold [letter, "letter. option"]; demos = the
  other rows (by id) HF-shuffled with the seed, first `shots`; rows of at least 65536 Llama-2 tokens;
  pre-truncation to N; HF shuffle (seed) and the first max_samples. Exact.
* NarrativeQA (test / train rows: document.text, question.text, answers[].text): the test split
  HF-shuffled (seed), documents over 131072 Llama-2 tokens, pre-truncated, the first max_samples.
  Upstream's demos come from an UNSEEDED shuffle of train; jaxeval shuffles train with the
  seed sha256(question) mod 2^31 per item (deterministic, not upstream's draw).
* Multi-LexSum (v20230518 validation / train rows with a non-null summary/short): context = the
  sources joined by blank lines, at least 65536 Llama-2 tokens, pre-truncated, then HF shuffle
  (seed) and the first max_samples. Upstream's demos are unseeded too; jaxeval seeds as above.
"""

from __future__ import annotations

from jaxeval.benchmarks.helmet.samples import hf_shuffle, sha_seed
from jaxeval.benchmarks.helmet.templates import TEMPLATES
from jaxeval.benchmarks.helmet.truncation import pretruncate
from jaxeval.errors import DataError

INFBENCH_MIN_TOKENS = 65536
NARRATIVEQA_MIN_TOKENS = 131072
UNSEEDED_NOTE = "demos: seeded per item by sha256(question) (upstream's shuffle is unseeded)"


def _max_tokens(dataset: str) -> int:
    return int(dataset.rsplit("_", 1)[-1])


def _long_enough(rows, tokenizer, minimum: int, strictly: bool = False) -> list[dict]:
    def length(text):
        return len(tokenizer(text)["input_ids"])
    return [r for r in rows if (length(r["context"]) > minimum if strictly else length(r["context"]) >= minimum)]


def _truncate(rows, tokenizer, dataset: str) -> list[dict]:
    return [dict(r, context=pretruncate(r["context"], tokenizer, _max_tokens(dataset))[0]) for r in rows]


def _demo_block(kind: str, items: list[str]) -> str:
    block = TEMPLATES[kind]["demo_block"]
    return block["prefix"] + block["item_separator"].join(items) + block["suffix"]


def infbench_rows(dataset: str, rows: list[dict], tokenizer, shots: int, max_samples: int | None,
                  seed: int = 42) -> list[dict]:
    kind = next(k for k in ("infbench_qa_eng", "infbench_choice_eng", "infbench_sum_eng") if k in dataset)
    mapped = []
    for i, row in enumerate(rows):
        missing = [f for f in ("id", "context", "input", "answer") if f not in row]
        if missing:
            raise DataError(f"{dataset} source row {i}: field '{missing[0]}' missing")
        out = dict(row, question=row["input"], demo="")
        if kind == "infbench_choice_eng":
            options = row.get("options") or []
            if len(options) != 4 or row["answer"][0] not in options:
                raise DataError(f"{dataset} source row {i} (id {row['id']!r}): field 'options' must hold 4 options "
                                "including the answer")
            letter = chr(ord("A") + options.index(row["answer"][0]))
            out["options"] = TEMPLATES[kind]["options_format"].format(*options)
            out["answer"] = [letter, f"{letter}. {row['answer'][0]}"]
        mapped.append(out)
    if shots > 0:
        item = TEMPLATES[kind]["demo_block"]["item"].replace("{answer0_stripped}", "{answer0}")
        with_demos = []
        for row in mapped:
            demos = hf_shuffle([r for r in mapped if r["id"] != row["id"]], seed)[:shots]
            texts = [item.format(question=d["question"], options=d.get("options", ""),
                                 answer0=d["answer"][0].strip() if kind == "infbench_sum_eng" else d["answer"][0])
                     for d in demos]
            with_demos.append(dict(row, demo=_demo_block(kind, texts)))
        mapped = with_demos
    mapped = _truncate(_long_enough(mapped, tokenizer, INFBENCH_MIN_TOKENS), tokenizer, dataset)
    return mapped if max_samples is None else hf_shuffle(mapped, seed)[:max_samples]


def narrativeqa_rows(dataset: str, test: list[dict], train: list[dict], tokenizer, shots: int,
                     max_samples: int | None, seed: int = 42) -> list[dict]:
    rows = []
    for i, row in enumerate(hf_shuffle(test, seed)):
        try:
            rows.append({"context": row["document"]["text"], "question": row["question"]["text"],
                         "answer": [a["text"] for a in row["answers"]],
                         "id": row.get("document", {}).get("id", i)})
        except (KeyError, TypeError):
            raise DataError(f"{dataset} test row {i}: fields document.text, question.text, answers[].text needed") from None
    rows = _long_enough(rows, tokenizer, NARRATIVEQA_MIN_TOKENS, strictly=True)
    item = TEMPLATES["narrativeqa"]["demo_block"]["item"]
    for row in rows:
        demos = hf_shuffle(train, sha_seed(row["question"]))[:shots] if shots else []
        row["demo"] = _demo_block("narrativeqa", [item.format(question=d["question"]["text"],
                                                              first_answer=d["answers"][0]["text"]) for d in demos]) \
            if shots else ""
    rows = _truncate(rows, tokenizer, dataset)
    return rows if max_samples is None else rows[:max_samples]


def multi_lexsum_rows(dataset: str, validation: list[dict], train: list[dict], tokenizer, shots: int,
                      max_samples: int | None, seed: int = 42) -> list[dict]:
    item = TEMPLATES["multi_lexsum"]["demo_block"]["item"]
    train = [r for r in train if r.get("summary/short") is not None]
    rows = []
    for i, row in enumerate(r for r in validation if r.get("summary/short") is not None):
        if not isinstance(row.get("sources"), list):
            raise DataError(f"{dataset} validation row {i}: field 'sources' must be a list of strings")
        out = dict(row, context="\n\n".join(row["sources"]), answer=row["summary/short"], question="")
        demos = hf_shuffle(train, sha_seed(out["context"][:1000]))[:shots] if shots else []
        out["demo"] = _demo_block("multi_lexsum", [item.format(summary_short=d["summary/short"]) for d in demos]) \
            if shots else ""
        out.pop("sources")
        rows.append(out)
    rows = _truncate(_long_enough(rows, tokenizer, INFBENCH_MIN_TOKENS), tokenizer, dataset)
    if max_samples is not None and len(rows) > max_samples:
        rows = hf_shuffle(rows, seed)[:max_samples]
    return rows
