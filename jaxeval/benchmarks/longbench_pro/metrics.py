"""LongBench Pro's six metrics, named and behaving as the official evaluator's functions.

Every metric takes the raw gold list and the raw prediction (parsing.py normalises them) and
returns a number in [0, 1]. `calculate_metric` reproduces the evaluator's failure handling: an
empty prediction, an unknown task, any exception or a value outside [0, 1] scores 0 and counts
as a failure. Reference: caskcsg/longcontext@50cdfaf LongBench-Pro/modules/utils.py (NDCG,
Pairwise_Accuracy, Accuracy, F1_Score, SubEM, Summary) and modules/evaluation.py
(Evaluator.calculate_metric); docs/provenance.md#longbench-pro lists each quirk, and each has a
worked test.
"""

from __future__ import annotations

import dataclasses
import math
from itertools import combinations
from typing import Protocol, Sequence

from jaxeval.benchmarks.longbench_pro.parsing import normalize_answers, normalize_summary, prediction_lines
from jaxeval.benchmarks.longbench_pro.tasks import SECONDARY_TASKS
from jaxeval.errors import ConfigError
from jaxeval.metrics.chinese import jieba_cut, jieba_version
from jaxeval.metrics.rouge_pltrdy import (
    RecursionModel, RougeInputError, RougeRecursionError, recursion_models, rouge_l_summary_f,
)

# rouge 1.0.1 rebuilds each LCS recursively and the evaluator's bare `except` turns the
# RecursionError into a ROUGE part of 0. The official stack (main.py <module> -> main ->
# evaluate -> evaluate_single_item -> calculate_metric -> Summary -> Summary_Max_Rouge_L ->
# get_scores -> _get_scores -> rouge_l_summary_level -> _union_lcs -> _recon_lcs) leaves 987
# levels for the walk under the default limit of 1000 on every CPython 3.8-3.13; what differs
# by version is how many levels the comparisons inside each call add (RecursionModel).
# Measured by running the official evaluation code (jieba or not) on 61 walk shapes near the
# limit under 3.8, 3.9, 3.10, 3.11, 3.12 and 3.13.
OFFICIAL_STACK_SLOTS = 987
# python3.11, python3.12+, python3.8-3.10, and none (unbounded recursion)
ROUGE_RECURSION_MODELS: dict[str, RecursionModel | None] = recursion_models(OFFICIAL_STACK_SLOTS)
DEFAULT_ROUGE_RECURSION = "python3.11"


class SemanticSimilarity(Protocol):
    def max_similarity(self, references: Sequence[str], prediction: str) -> float:
        """max_i cosine(E(references[i]), E(prediction)), each text embedded as given."""


@dataclasses.dataclass(frozen=True)
class ScoringOptions:
    """Choices that change LongBench Pro numbers; the defaults reproduce the official results."""

    rouge_recursion: str = DEFAULT_ROUGE_RECURSION

    def __post_init__(self):
        if self.rouge_recursion not in ROUGE_RECURSION_MODELS:
            raise ConfigError(f"unknown rouge_recursion '{self.rouge_recursion}'; "
                              f"available: {', '.join(ROUGE_RECURSION_MODELS)}")

    @property
    def rouge_model(self) -> RecursionModel | None:
        return ROUGE_RECURSION_MODELS[self.rouge_recursion]

    def describe(self) -> dict:
        return {"rouge": "pltrdy rouge 1.0.1 semantics (jaxeval.metrics.rouge_pltrdy)",
                "rouge_recursion": self.rouge_recursion,
                "rouge_recursion_model": dataclasses.asdict(self.rouge_model) if self.rouge_model else None,
                "ndcg": "trec_eval ndcg_cut.k, k = len(gold), linear gain (pure Python)",
                "jieba": jieba_version()}


DEFAULT_OPTIONS = ScoringOptions()


def accuracy(answers: Sequence[str], prediction: str) -> float:
    """1 if the first prediction line equals the first gold item exactly ("ab" != "ba")."""
    gold, lines = normalize_answers(answers), prediction_lines(prediction)
    return 1.0 if gold and lines and gold[0] == lines[0] else 0.0


def f1_score(answers: Sequence[str], prediction: str) -> float:
    """Set F1 over whole lines; duplicates collapse and a blank line is a (wrong) item."""
    gold, predicted = set(normalize_answers(answers)), set(prediction_lines(prediction))
    common = gold & predicted
    if not common:
        return 0.0
    precision, recall = len(common) / len(predicted), len(common) / len(gold)
    return (2 * precision * recall) / (precision + recall)


def sub_em(answers: Sequence[str], prediction: str) -> float:
    """Fraction of gold items found as a whole prediction line (recall only)."""
    gold, lines = normalize_answers(answers), prediction_lines(prediction)
    if not gold or not lines:
        return 0.0
    return sum(1.0 for item in gold if item in lines) / len(gold)


def pairwise_accuracy(answers: Sequence[str], prediction: str) -> float:
    """Gold pairs in the right order over C(#prediction lines, 2); a repeated line counts at its
    last position, and blank or extra lines enlarge the denominator."""
    gold, lines = normalize_answers(answers), prediction_lines(prediction)
    if len(gold) < 2 or len(lines) < 2:
        return 0.0
    position = {line: index for index, line in enumerate(lines)}  # last occurrence wins
    correct = sum(1 for a, b in combinations(gold, 2)
                  if a in position and b in position and position[a] < position[b])
    return correct / (len(lines) * (len(lines) - 1) // 2)


def ndcg(answers: Sequence[str], prediction: str) -> float:
    """trec_eval's ndcg_cut.k with k = len(gold) (before deduplication), as pytrec_eval gives it.

    Gold item i of n has relevance n - i (a repeated gold item keeps its last relevance); line j
    of m predicted lines gets score m - j (a repeated line keeps its last score, so it ranks at
    its last position). Documents rank by descending score; gain is linear:
    DCG@k = sum rel(r) / log2(r + 1); IDCG from the relevances sorted in descending order.
    """
    gold, lines = normalize_answers(answers), prediction_lines(prediction)
    if not gold or not lines:
        return 0.0
    k = len(gold)
    relevance = {item: len(gold) - i for i, item in enumerate(gold)}
    score = {line: len(lines) - j for j, line in enumerate(lines)}
    ranked = sorted(score, key=lambda doc: (-score[doc], _descending(doc)))[:k]
    dcg = 0.0
    for rank, doc in enumerate(ranked, start=1):
        gain = relevance.get(doc, 0)
        if gain > 0:
            dcg += gain / math.log2(rank + 1)
    ideal = 0.0
    for rank, gain in enumerate(sorted(relevance.values(), reverse=True)[:k], start=1):
        ideal += gain / math.log2(rank + 1)
    return dcg / ideal if ideal > 0 else 0.0


def _descending(doc: str) -> tuple[int, ...]:
    # trec_eval breaks score ties by document id in descending order; scores here never tie,
    # the key only keeps the sort total
    return tuple(-ord(ch) for ch in doc)


def summary_max_rouge_l(answers: Sequence[str], prediction: str, is_zh: bool,
                        options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    """max_i ROUGE-L F (rouge 1.0.1) of the normalised prediction against each normalised gold.

    Chinese: both sides are jieba-tokenised and joined with spaces. If the package would raise
    for ANY reference (no sentence, recursion too deep), the whole ROUGE part is 0.
    """
    references, hypothesis = normalize_answers(answers), normalize_summary(prediction)
    if is_zh:
        references = [" ".join(jieba_cut(reference)) for reference in references]
        hypothesis = " ".join(jieba_cut(hypothesis))
    try:
        return max(rouge_l_summary_f(hypothesis, reference, recursion=options.rouge_model)
                   for reference in references)
    except (RougeInputError, RougeRecursionError):  # upstream: a bare except returning 0.0
        return 0.0


def summary(answers: Sequence[str], prediction: str, is_zh: bool, semsim: SemanticSimilarity,
            options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    """0.5 max SemSim + 0.5 max ROUGE-L over the references; the lowercased texts are embedded."""
    references, hypothesis = normalize_answers(answers), normalize_summary(prediction)
    if not references or not hypothesis:
        return 0.0
    similarity = semsim.max_similarity(references, hypothesis)
    return 0.5 * similarity + 0.5 * summary_max_rouge_l(answers, prediction, is_zh, options)


@dataclasses.dataclass(frozen=True)
class MetricOutcome:
    success: bool  # False: counted in fail_samples_num (the score is then 0)
    value: float
    error: str | None = None


def calculate_metric(secondary_task: str, answers: Sequence[str], prediction: str, is_zh: bool,
                     semsim: SemanticSimilarity | None, options: ScoringOptions = DEFAULT_OPTIONS) -> MetricOutcome:
    """One sample's score with the evaluator's failure rules (see the module doc)."""
    if prediction == "":
        return MetricOutcome(False, 0.0, "empty prediction")
    task = SECONDARY_TASKS.get(secondary_task)
    if task is None:
        return MetricOutcome(False, 0.0, f"unknown secondary task {secondary_task!r}")
    try:
        if task.metric == "Summary":
            if semsim is None:
                raise ConfigError("no embedding model for SemSim (see --longbench_pro_embedding_model)")
            value = summary(answers, prediction, is_zh, semsim, options)
        else:
            value = METRICS[task.metric](answers, prediction)
    except Exception as error:  # upstream: any exception scores 0 and counts as a failure
        return MetricOutcome(False, 0.0, f"{type(error).__name__}: {error}")
    if not 0.0 <= value <= 1.0:  # upstream asserts the range; a float overshoot fails the sample
        return MetricOutcome(False, 0.0, f"metric {value!r} is not in [0, 1]")
    return MetricOutcome(True, value)


METRICS = {"NDCG": ndcg, "Pairwise_Accuracy": pairwise_accuracy, "Accuracy": accuracy,
           "F1_Score": f1_score, "SubEM": sub_em}
