"""Row and demo selection reproduce HELMET's (HF datasets shuffles, Python random key sampling)."""

from __future__ import annotations

import hashlib
import random

import datasets

from jaxeval.benchmarks.helmet import samples as S


def test_hf_shuffle_is_datasets_shuffle():
    rows = [{"i": i} for i in range(37)]
    for seed in (42, 1234567):
        assert S.hf_shuffle(rows, seed) == datasets.Dataset.from_list(rows).shuffle(seed=seed).to_list()


def kilt_rows(prefix: str, n: int, depths: int = 1, with_id: bool = True) -> list[dict]:
    rows = []
    for q in range(n):
        for d in range(depths):
            row = {"question": f"{prefix} question {q}?", "answers": [f"ans{q}"], "depth": d,
                   "ctxs": [{"title": f"T{q}", "text": f"text {q} {d}"}]}
            if with_id:
                row["id"] = f"{prefix}-{q}"
            rows.append(row)
    return rows


def test_rag_keys_and_demos_follow_helmet():
    test, demos = kilt_rows("dev", 12, depths=3), kilt_rows("train", 9, depths=2)
    out = S.rag_samples(test, demos, "kilt_triviaqa", shots=2, n=4)
    random.seed(42)
    keys = set(random.sample(sorted({r["id"] for r in test}), 4))
    assert [r["id"] for r in out] == [r["id"] for r in test if r["id"] in keys] and len(out) == 12
    # demos: HF shuffle seeded by sha256(key) % 2**31, repeated keys dropped, first two
    pool = datasets.Dataset.from_list(demos)
    for row in out[:3]:
        h = int(hashlib.sha256(row["id"].encode()).hexdigest(), 16) % 2**31
        chosen, seen = [], set()
        for d in pool.shuffle(seed=h):
            if d["id"] not in seen:
                seen.add(d["id"])
                chosen.append(d)
        expected = "\n\n".join(f"Document (Title: {d['ctxs'][0]['title']}): {d['ctxs'][0]['text']}\n\n"
                               f"Question: {d['question']}\nAnswer: {d['answers'][0]}" for d in chosen[:2]) + "\n\n"
        assert row["demos"] == expected


def test_nq_without_ids_samples_questions():
    test = kilt_rows("dev", 5, depths=2, with_id=False)
    out = S.rag_samples(test, kilt_rows("train", 4, with_id=False), "kilt_nq", shots=1, n=2)
    assert len(out) == 4 and len({r["question"] for r in out}) == 2


def test_popqa_filters_popularity_and_excludes_own_question():
    test = [dict(r, s_pop=10 ** (1 + i)) for i, r in enumerate(kilt_rows("p", 4))]  # log10 = 1, 2, 3, 4
    out = S.rag_samples(test, test, "kilt_popqa_3", shots=1, n=None)
    assert [r["id"] for r in out] == ["p-0", "p-1"]
    assert "p question 1?" not in out[1]["demos"] and "p question 0?" in out[1]["demos"]


def test_json_kv_demos_and_shuffled_head():
    recs = [{"context": "JSON data:\n{}", "question": f"k{i}", "answer": ["v"], "num_kvs": 1,
             "demos": [["a", "b"], ["c", "d"], ["e", "f"]]} for i in range(5)]
    out = S.json_kv_samples(recs, shots=2, n=3)
    assert out[0]["demos"] == "Key: a\nCorresponding value: b\n\nKey: c\nCorresponding value: d\n\n"
    assert [r["question"] for r in out] == [recs[i]["question"] for i in [int(x) for x in
                                            __import__("numpy").random.default_rng(42).permutation(5)[:3]]]


def test_alce_demos_consume_the_seeded_random_stream_in_file_order():
    prompt = {"instruction": "INSTR", "doc_prompt": "Document [{ID}](Title: {title}): {text}",
              "demo_prompt": "{instruction}\n\nQuestion: {question}\n\n{context}\nAnswer: {answer}",
              "demos": [{"question": f"dq{i}", "answer": f"da{i}", "docs": [{"title": "t", "text": "x"}]}
                        for i in range(4)]}
    recs = [{"question": f"q{i}", "docs": [{"title": f"T{j}", "text": "y"} for j in range(5)], "answers": [["a"]]}
            for i in range(3)]
    out = S.alce_samples(recs, prompt, "alce_qampari_2", shots=2, n=None)
    random.seed(42)
    picks = [random.sample(prompt["demos"], 2) for _ in recs]
    for row, pick in zip(out, picks):
        assert [f"Question: {d['question']}" in row["demo_text"] for d in pick] == [True, True]
        assert row["demo_text"].endswith("\n\n\n") and row["context"].count("Document [") == 2
