"""HELMET's per-sample answer metrics: utils.py calculate_metrics, parse_output and their helpers
(princeton-nlp/HELMET@4526dfb), reimplemented (docs/provenance.md#helmet).

* normalisation: the SQuAD one shared with LongBench (jaxeval.metrics.normalize_answer_en);
* exact_match / substring_exact_match / f1 take the max over the gold list; a gold list whose
  FIRST element is a list is flattened (only then: HELMET checks element 0 only);
* f1 is 0 when either normalised side is yes/no/noanswer and the two differ;
* ROUGE: the rouge-score package, rougeL and rougeLsum with the Porter stemmer, target = gold;
  fmeasure and recall are each maxed over golds separately;
* parse_output: the rest of the line after the first case-insensitive occurrence of the prefix
  (used as a regular expression, unescaped, as upstream), else the first line; stripped, and the
  prefix removed once more from its start;
* the default post-process takes the element-wise max of the metrics of the raw and parsed output.
Metrics are bools/floats per sample; averages x100 happen in aggregate.py.
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from jaxeval.metrics.token_f1 import normalize_answer_en, token_f1

_YES_NO = ("yes", "no", "noanswer")


def flatten_golds(answers) -> list[str]:
    """HELMET's gold handling: a string becomes [string]; a list whose first item is a list is flattened."""
    if isinstance(answers, str):
        return [answers]
    answers = list(answers)
    if answers and isinstance(answers[0], list):
        return [gold for group in answers for gold in group]
    return answers


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer_en(prediction) == normalize_answer_en(gold)


def substring_exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer_en(gold) in normalize_answer_en(prediction)


def f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer_en(prediction), normalize_answer_en(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0
    return token_f1(pred.split(), ref.split())


@functools.lru_cache(maxsize=1)
def _rouge_scorer():
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL", "rougeLsum"], use_stemmer=True)


def calculate_metrics(prediction: str, answers) -> dict:
    """exact_match, f1, substring_exact_match, rougeL_f1/_recall, rougeLsum_f1/_recall of one output."""
    golds = flatten_golds(answers)
    scorer = _rouge_scorer()
    rouges = [scorer.score(target=gold, prediction=prediction) for gold in golds]
    metrics = {
        "exact_match": max(exact_match(prediction, g) for g in golds),
        "f1": max(f1(prediction, g) for g in golds),
        "substring_exact_match": max(substring_exact_match(prediction, g) for g in golds),
    }
    for kind in ("rougeL", "rougeLsum"):
        metrics[f"{kind}_f1"] = max(r[kind].fmeasure for r in rouges)
        metrics[f"{kind}_recall"] = max(r[kind].recall for r in rouges)
    return metrics


def parse_output(output: str, prefix: str = "Answer:") -> str:
    """The answer part of an output (see the module doc); never None for a string input."""
    match = re.search(f"(?:{prefix})(.*)(?:\n|$)", output, flags=re.IGNORECASE)
    if match is None:
        match = re.search(r"(?:^)(.*)(?:\n|$)", output)
    return re.sub(f"^{re.escape(prefix)}", "", match[1].strip(), flags=re.IGNORECASE).strip()


def max_of(first: dict, second: dict) -> dict:
    return {name: max(value, second[name]) for name, value in first.items()}


def default_post_process(output: str, answers, prefix: str = "Answer:") -> tuple[dict, dict]:
    """(metrics, extra fields) as HELMET's default: max over the raw and the parsed output."""
    parsed = parse_output(output, prefix)
    return max_of(calculate_metrics(output, answers), calculate_metrics(parsed, answers)), {"parsed_output": parsed}


def json_kv_post_process(output: str, answers) -> tuple[dict, dict]:
    """JSON KV: the default post-process with the lower-case prefix "corresponding value:"."""
    return default_post_process(output, answers, prefix="corresponding value:")


def ruler_recall(output: str, answers: Sequence[str]) -> float:
    """Fraction of the golds found, case-insensitively, as substrings of the raw output."""
    return sum(gold.lower() in output.lower() for gold in answers) / len(answers)


def ruler_post_process(output: str, answers) -> tuple[dict, dict]:
    return {"ruler_recall": ruler_recall(output, answers)}, {"parsed_output": output}


def choice_post_process(output: str, answers) -> tuple[dict, dict]:
    """InfBench En.MC. answers = [letter, "letter. option"]. SubEM is only the long form found
    (lower-cased, not normalised) in the raw output, and it then also sets exact_match."""
    metrics = calculate_metrics(output, answers)
    metrics.pop("substring_exact_match")
    parsed = parse_output(output)
    parsed_metrics = calculate_metrics(parsed, answers)
    parsed_metrics.pop("substring_exact_match")
    metrics = max_of(metrics, parsed_metrics)
    metrics["substring_exact_match"] = False
    if answers[1].lower() in output.lower():
        metrics["substring_exact_match"] = True
        metrics["exact_match"] = True
    return metrics, {"parsed_output": parsed}


def icl_post_process(output: str, answers) -> tuple[dict, dict]:
    """ICL: metrics of the text parsed after "label:" only (no max with the raw output)."""
    parsed = parse_output(output, "label:")
    return calculate_metrics(parsed, answers), {"parsed_output": parsed}
