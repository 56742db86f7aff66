"""A HELMET data folder with every dataset of the seven categories at 8k (a few items each, in
the released layout and the prepared-row schema), so a run can reach the overall score; and a
scripted OpenAI-compatible judge answering HELMET's judge prompts in the formats its parsers read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helmet_helpers import SAMPLE

ICL = ("icl_trec_coarse_400shot_balance", "icl_trec_fine_400shot_balance", "icl_banking77_360shot_balance",
       "icl_clinic150_440shot_balance", "icl_nlu_510shot_balance")


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_full_data(root: Path, items: int = 2) -> Path:
    """root/data/... and root/prepared/...: the shipped sample plus rerank, cite, summ and ICL."""
    shutil.copytree(SAMPLE / "data", root / "data")
    shutil.copytree(SAMPLE / "prepared", root / "prepared")
    passages = [{"id": str(i), "text": f"passage {i} about the river Avon", "label": (i * 7) % 3} for i in range(1, 13)]
    for name, prefix, n in (("test_reranking_data_k50_dep3.jsonl", "t", items), ("test_reranking_data_k10_dep3.jsonl",
                                                                                  "d", 6)):
        _jsonl(root / "data" / "msmarco" / name, [{"qid": f"{prefix}{q}", "query": f"where is the Avon {q}?",
                                                   "ctxs": passages} for q in range(n)])
    docs = [{"title": f"Doc {i}", "text": f"Ada Lovelace wrote the first program, note {i}."} for i in range(40)]
    asqa = [{"question": f"Who wrote the first program {q}?", "answer": "Ada Lovelace.", "docs": docs,
             "qa_pairs": [{"short_answers": ["Ada Lovelace"]}]} for q in range(items)]
    qampari = [{"question": f"Who wrote programs {q}?", "docs": docs, "answers": [["Ada Lovelace", "Ada"]]}
               for q in range(items)]
    for name, rows in (("asqa_eval_gtr_top2000.json", asqa), ("qampari_eval_gtr_top2000.json", qampari)):
        (root / "data" / "alce").mkdir(parents=True, exist_ok=True)
        (root / "data" / "alce" / name).write_text(json.dumps({"data": rows}))
    story = "Ada Lovelace wrote the first program for the Analytical Engine. " * 20
    for name in ("infbench_sum_eng_6792", "multi_lexsum_7492"):
        _jsonl(root / "prepared" / f"{name}.jsonl", [
            {"id": q, "context": story, "question": "", "answer": "Ada wrote a program.",
             "keypoints": ["Ada wrote a program", "for the Engine"], "expert_summary": "Ada wrote a program."}
            for q in range(items)])
    for name in ICL:
        _jsonl(root / "prepared" / f"{name}.jsonl", [
            {"context": "\n\n".join(f"text: example {i}\nlabel: {i % 3}" for i in range(9)),
             "question": f"example {q}", "answer": str(q % 3)} for q in range(items)])
    return root


def judge_reply(prompt: str) -> str:
    """What a rubric-following judge answers to each of HELMET's judge prompts (the rubric's own
    "output your score in the following json format" names the fields), and the NLI judge's "1"."""
    if prompt.startswith("premise: "):
        return "1"
    asked = prompt.rsplit("json format:", 1)[-1].split("\n", 1)[0]
    if '"correctness"' in asked:  # LongQA: the last {...} holds both
        return 'The answer is right. {"fluency": 1, "correctness": 2}'
    if '"sentence_count"' in asked:
        return 'Output: {"precision": 1, "sentence_count": 2}'
    if '"recall"' in asked:
        return 'Output: {"supported_key_points": [1], "recall": 1}'
    if '"fluency"' in asked:
        return 'Output: {"fluency": 1}'
    return "no rubric recognised"
