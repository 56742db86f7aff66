"""MS MARCO re-ranking: HELMET's ranking parser and trec_eval's measures (as pytrec_eval gives them).

parse_rankings: delete "[", "]" and ":", lower-case, delete every "id", take the longest
"n > n > ..." run of integers; the i-th id of a run of length n scores n - i (the first
occurrence wins). Without any integer the whole processed string is the one "id".

trec_eval semantics (relevance_level 1): documents ranked by score descending, ties by
document id descending (trec_eval's order); unjudged documents are not relevant;
ndcg_cut_k: linear gain = label, log2(rank + 1) discount, ideal DCG over all judged labels;
map_cut_k: sum of precision at each relevant rank <= k, over all relevant; recall_k;
P_k (divides by k); recip_rank: 1 / rank of the first relevant. HELMET rounds each measure to
5 decimals per query (its per-sample metrics go through the per-query average).
"""

from __future__ import annotations

import math
import re

K_VALUES = (1, 5, 10, 20, 50, 100, 200, 500, 1000)


def parse_rankings(output: str) -> dict[str, int]:
    text = re.sub(r"[\[\]:]", "", output).lower().replace("id", "")
    longest = ""
    for match in re.finditer(r"(\d+)(?:\s*>\s*(\d+))*", text):
        if len(match.group(0)) > len(longest):
            longest = match.group(0)
    ranking = [part.strip() for part in longest.split(">") if part.strip().isdigit()] if longest else [text]
    scores: dict[str, int] = {}
    for i, doc in enumerate(ranking):
        scores.setdefault(doc, len(ranking) - i)
    return scores


def k_values_for(num_candidates: int) -> list[int]:
    return [k for k in K_VALUES if k <= num_candidates]


def _ranked(results: dict[str, float]) -> list[str]:
    # trec_eval sorts by score descending, then by docno descending
    return [doc for doc, _ in sorted(results.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def _dcg(gains) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def retrieval_metrics(results: dict[str, float], qrels: dict[str, int], k_values) -> dict[str, float]:
    """NDCG@k, MAP@k, Recall@k, P@k for each k, and MRR, of one query, rounded to 5 decimals."""
    ranked = _ranked(results)
    labels = [qrels.get(doc, 0) for doc in ranked]
    relevant_total = sum(1 for v in qrels.values() if v >= 1)
    ideal = sorted((v for v in qrels.values() if v > 0), reverse=True)
    out: dict[str, float] = {}
    for name in ("NDCG", "MAP", "Recall", "P"):
        for k in k_values:
            top = labels[:k]
            if name == "NDCG":
                idcg = _dcg(ideal[:k])
                value = _dcg(top) / idcg if idcg > 0 else 0.0
            elif name == "MAP":
                hits, total = 0, 0.0
                for rank, label in enumerate(top, start=1):
                    if label >= 1:
                        hits += 1
                        total += hits / rank
                value = total / relevant_total if relevant_total else 0.0
            elif name == "Recall":
                value = sum(1 for v in top if v >= 1) / relevant_total if relevant_total else 0.0
            else:
                value = sum(1 for v in top if v >= 1) / k
            out[f"{name}@{k}"] = round(value, 5)
    first = next((rank for rank, label in enumerate(labels, start=1) if label >= 1), None)
    out["MRR"] = round(1.0 / first if first else 0.0, 5)
    return out


def rerank_post_process(output: str, qrel, num_candidates: int) -> tuple[dict, dict]:
    """HELMET's re-rank post-process. qrel: [[doc id, label as string], ...] of the sample."""
    parsed = parse_rankings(output)
    qrels = {str(doc): int(label) for doc, label in qrel}
    metrics = retrieval_metrics(parsed, qrels, k_values_for(num_candidates))
    metrics["num_preds"] = len(parsed)
    return metrics, {"parsed_output": parsed}
