"""Many-shot ICL rows, built as HELMET's data.py load_icl builds them from the label datasets.

Reproduced exactly (given the same source rows): the test set (HF shuffle with the seed, then
label-balanced rounds to max_test rows), each item's local seed (sha256(text) + seed) mod 2^31,
its label-balanced demos (random.Random(local seed): per label in first-appearance order
`num_rounds % len(samples)` indices, topped up without replacement, then each round shuffled)
and the random integer relabelling (random.seed(local seed); random.shuffle). NLU's test split is
HF's train_test_split(test_size=0.1, seed): the first ceil(0.1 n) of default_rng(seed)'s permutation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random

from jaxeval.benchmarks.helmet.samples import hf_shuffle
from jaxeval.benchmarks.helmet.templates import TEMPLATES
from jaxeval.errors import ConfigError, DataError


@dataclasses.dataclass(frozen=True)
class ICLSource:
    hub_id: str
    config: str | None
    train_split: str
    test_split: str | None  # None: NLU, split 90/10 from train
    label_field: str
    num_labels: int


SOURCES = {
    "trec_coarse": ICLSource("CogComp/trec", None, "train", "test", "coarse_label", 6),
    "trec_fine": ICLSource("CogComp/trec", None, "train", "test", "fine_label", 50),
    "banking77": ICLSource("PolyAI/banking77", None, "train", "test", "label", 77),
    "clinic150": ICLSource("clinc_oos", "plus", "train", "validation", "intent", 151),
    "nlu": ICLSource("xingkunliuxtracta/nlu_evaluation_data", None, "train", None, "label", 68),
}


def source_of(dataset: str) -> ICLSource:
    for name, source in SOURCES.items():
        if name in dataset.lower():
            return source
    raise ConfigError(f"unknown ICL dataset {dataset!r}")


def shots_of(dataset: str) -> int:
    return int(dataset.split("shot")[0].split("_")[-1])


def nlu_split(rows: list[dict], seed: int) -> tuple[list[dict], list[dict]]:
    """(train, test) as HF train_test_split(test_size=0.1, seed=seed)."""
    import numpy as np

    permutation = np.random.default_rng(seed).permutation(len(rows))
    n_test = math.ceil(0.1 * len(rows))
    return [rows[i] for i in permutation[n_test:]], [rows[i] for i in permutation[:n_test]]


def group_by_label(rows: list[dict], label_field: str) -> dict:
    groups: dict = {}
    for row in rows:
        groups.setdefault(row[label_field], []).append(row)
    return groups


def balance_labels(groups: dict, shots: int, seed: int) -> list[dict]:
    """HELMET's balance_labels over rows already grouped by label (first-appearance order)."""
    rand = random.Random(seed)
    rounds = math.ceil(shots / len(groups))
    out = [[] for _ in range(rounds)]
    for samples in groups.values():
        indices = rand.sample(range(len(samples)), rounds % len(samples))
        while len(indices) < rounds:
            indices += rand.sample(range(len(samples)), min(rounds - len(indices), len(samples)))
        for i, index in enumerate(indices):
            out[i].append(samples[index])
    for chunk in out:
        rand.shuffle(chunk)
    return [row for chunk in out for row in chunk][:shots]


def icl_rows(dataset: str, train: list[dict], test: list[dict], max_test: int | None, seed: int = 42,
             id2label: list[str] | None = None, text_field: str = "text") -> list[dict]:
    """The prepared rows (context = demo block, question = test text, answer = mapped label)."""
    source = source_of(dataset)
    label = source.label_field
    for where, rows in (("train", train), ("test", test)):
        bad = next((i for i, r in enumerate(rows) if not isinstance(r.get(text_field), str) or label not in r), None)
        if bad is not None:
            raise DataError(f"{dataset} {where} row {bad}: fields '{text_field}' (string) and '{label}' needed")
    if max_test is not None and len(test) > max_test:
        test = balance_labels(group_by_label(hf_shuffle(test, seed), label), max_test, seed)
    item = TEMPLATES["icl"]["item_template"]
    train_groups = group_by_label(train, label)
    shot = shots_of(dataset)
    out = []
    for row in test:
        local_seed = (int(hashlib.sha256(row[text_field].encode("utf-8")).hexdigest(), 16) + seed) % 2**31
        if "balance" in dataset:
            demos = balance_labels(train_groups, shot, local_seed)
        else:
            raise ConfigError(f"{dataset}: only the label-balanced ICL sets (*_balance) are reproducible")
        if "natural_label" in dataset:
            if id2label is None:
                raise ConfigError(f"{dataset}: natural labels need the label names")
            mapping = list(id2label[:source.num_labels])
        else:
            mapping = list(range(source.num_labels))
            random.seed(local_seed)
            random.shuffle(mapping)
        context = "\n\n".join(item.format(text=d[text_field], label=str(mapping[int(d[label])])) for d in demos)
        out.append({"context": context, "question": row[text_field], "answer": str(mapping[int(row[label])])})
    return out
