"""Rows HELMET builds from hub datasets: ICL (balanced demos, relabelling, NLU split) and the
long-document sets (InfBench options/demos, length filter and Llama-2-style pre-truncation)."""

from __future__ import annotations

import datasets
import pytest

from jaxeval.benchmarks.helmet import longdoc
from jaxeval.benchmarks.helmet.icl import balance_labels, group_by_label, icl_rows, nlu_split
from jaxeval.benchmarks.helmet.truncation import OMISSION_MARKER


def label_rows(n_labels: int, per_label: int, prefix: str) -> list[dict]:
    return [{"text": f"{prefix} text {label}-{i}", "coarse_label": label}
            for i in range(per_label) for label in range(n_labels)]


def test_nlu_split_is_hf_train_test_split():
    rows = [{"text": str(i), "label": i % 3} for i in range(57)]
    train, test = nlu_split(rows, 42)
    split = datasets.Dataset.from_list(rows).train_test_split(test_size=0.1, seed=42)
    assert test == split["test"].to_list() and train == split["train"].to_list()


def test_balance_labels_rounds_cover_every_label_then_truncate():
    groups = group_by_label(label_rows(6, 4, "tr"), "coarse_label")
    demos = balance_labels(groups, 14, seed=7)
    assert len(demos) == 14
    for start in (0, 6):  # rounds of one example per label, each round shuffled
        assert sorted(d["coarse_label"] for d in demos[start:start + 6]) == list(range(6))
    assert demos == balance_labels(groups, 14, seed=7) and demos != balance_labels(groups, 14, seed=8)


def test_balance_labels_tops_up_small_labels():
    groups = {0: [{"t": "a"}, {"t": "b"}]}  # 3 rounds, 2 samples: 3 % 2 = 1 index, then 2 more
    picks = balance_labels(groups, 3, seed=1)
    assert len(picks) == 3 and {p["t"] for p in picks} == {"a", "b"}


def test_icl_rows_relabel_with_one_permutation_per_item():
    rows = icl_rows("icl_trec_coarse_12shot_balance", label_rows(6, 5, "tr"), label_rows(6, 3, "te"), max_test=6)
    assert len(rows) == 6 and sorted(r["question"].split()[-1].split("-")[0] for r in rows) == list("012345")
    for row in rows:
        pairs = [block.split("\nlabel: ") for block in row["context"].split("\n\n")]
        assert len(pairs) == 12
        mapping = {text.split()[-1].split("-")[0]: label for text, label in pairs}
        assert len(set(mapping.values())) == 6  # one integer per label
        assert row["answer"] == mapping[row["question"].split()[-1].split("-")[0]]


def infbench_source(n: int) -> list[dict]:
    return [{"id": i, "context": ("long words here " * (300 + 10 * i)), "input": f"question {i}?",
             "answer": [f"opt{i}b"], "options": [f"opt{i}a", f"opt{i}b", f"opt{i}c", f"opt{i}d"]} for i in range(n)]


def test_infbench_choice_rows(tokenizer, monkeypatch):
    monkeypatch.setattr(longdoc, "INFBENCH_MIN_TOKENS", 600)
    rows = longdoc.infbench_rows("infbench_choice_eng_500", infbench_source(5), tokenizer, shots=2, max_samples=3)
    assert len(rows) == 3
    row = rows[0]
    assert row["answer"] == ["B", f"B. opt{row['id']}b"] and row["options"].startswith(f"A. opt{row['id']}a\nB. ")
    assert row["demo"].startswith("For example:\n\n[story text]\nQuestion: question")
    assert row["demo"].endswith("\n\nNow, read the following story:\n\n") and f"question {row['id']}?" not in row["demo"]
    assert row["context"].endswith(OMISSION_MARKER)


def test_infbench_rejects_bad_options(tokenizer):
    bad = infbench_source(1)
    bad[0]["options"] = ["x"]
    with pytest.raises(Exception, match="field 'options' must hold 4 options"):
        longdoc.infbench_rows("infbench_choice_eng_500", bad, tokenizer, shots=0, max_samples=None)
