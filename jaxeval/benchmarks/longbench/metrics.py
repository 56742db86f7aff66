"""LongBench's nine metric functions, named and behaving as in the official metrics.py.

Each takes (prediction, one ground truth, all_classes) and returns a number in [0, 1]; the
scorer takes the max over the gold answers (scoring.py). Options that change numbers (the
code-similarity backend, the ROUGE recursion limit) come in a ScoringOptions and are
recorded with every result. Reference: THUDM/LongBench@2e00731 LongBench/metrics.py, the
function of the same name (docs/provenance.md#longbench).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Sequence

from jaxeval.errors import ConfigError, DataError
from jaxeval.metrics.chinese import jieba_cut, jieba_version
from jaxeval.metrics.edit_similarity import BACKENDS, fuzz_ratio, levenshtein_version
from jaxeval.metrics.rouge_pltrdy import (
    RecursionModel, RougeInputError, RougeRecursionError, recursion_models, rouge_l_summary_f,
)
from jaxeval.metrics.token_f1 import normalize_answer_en, normalize_token_zh, token_f1

# The official ROUGE reconstructs each LCS recursively, so a long sentence pair raises
# RecursionError (scored 0). Under the default limit of 1000 the official stack (eval.py
# <module> -> scorer -> rouge_score -> Rouge.get_scores -> _get_avg_scores -> <lambda> ->
# rouge_l_summary_level -> _union_lcs -> _recon_lcs) leaves 991 levels to the walk, four more
# than LongBench Pro's; rouge_zh_score calls rouge_score, one frame more. The comparisons
# inside each call add 0-2 levels by CPython version and walk shape (RecursionModel, the same
# per-version extras as LongBench Pro). Measured by running the official eval.py
# (`python eval.py --model X`, rouge 1.0.1, jieba 0.42.1) on 13 walk shapes near the limit,
# English and Chinese, under CPython 3.8, 3.9, 3.10, 3.11, 3.12 and 3.13.
OFFICIAL_STACK_SLOTS = {"en": 991, "zh": 990}
_EN, _ZH = recursion_models(OFFICIAL_STACK_SLOTS["en"]), recursion_models(OFFICIAL_STACK_SLOTS["zh"])
# python3.11, python3.12+, python3.8-3.10 -> {"en": model, "zh": model}; none: unbounded recursion
ROUGE_RECURSION_MODELS: dict[str, dict[str, RecursionModel] | None] = {
    name: None if _EN[name] is None else {"en": _EN[name], "zh": _ZH[name]} for name in _EN}
# Earlier names: "python3.11+" was the default (3.11 and 3.12 were thought to agree)
ROUGE_RECURSION_ALIASES = {"python3.11+": "python3.11"}
DEFAULT_ROUGE_RECURSION = "python3.11"
_DIGIT_RUNS = re.compile(r"\d+")  # Unicode digits too, as upstream: "２７" is a number (not "27")
_PARAGRAPH_ID = {"en": re.compile(r"Paragraph (\d+)"), "zh": re.compile(r"段落(\d+)")}


@dataclasses.dataclass(frozen=True)
class ScoringOptions:
    """Choices that change LongBench numbers; the defaults reproduce the official results."""

    code_sim_backend: str = "difflib"  # "levenshtein": fuzzywuzzy with python-Levenshtein installed
    rouge_recursion: str = DEFAULT_ROUGE_RECURSION  # a key of ROUGE_RECURSION_MODELS (or an alias)

    def __post_init__(self):
        if self.code_sim_backend not in BACKENDS:
            raise ConfigError(f"unknown code_sim_backend '{self.code_sim_backend}'; "
                              f"available: {', '.join(BACKENDS)}")
        object.__setattr__(self, "rouge_recursion",
                           ROUGE_RECURSION_ALIASES.get(self.rouge_recursion, self.rouge_recursion))
        if self.rouge_recursion not in ROUGE_RECURSION_MODELS:
            raise ConfigError(f"unknown rouge_recursion '{self.rouge_recursion}'; "
                              f"available: {', '.join(ROUGE_RECURSION_MODELS)}")

    def rouge_model(self, language: str) -> RecursionModel | None:
        models = ROUGE_RECURSION_MODELS[self.rouge_recursion]
        return None if models is None else models[language]

    def describe(self) -> dict:
        """What the results record about how they were scored."""
        described = {
            "code_sim_backend": self.code_sim_backend,
            "rouge": "pltrdy rouge 1.0.1 semantics (jaxeval.metrics.rouge_pltrdy)",
            "rouge_recursion": self.rouge_recursion,
            "rouge_recursion_model": {language: dataclasses.asdict(self.rouge_model(language))
                                      for language in OFFICIAL_STACK_SLOTS} if self.rouge_model("en") else None,
            "jieba": jieba_version(),
        }
        if self.code_sim_backend == "levenshtein":
            described["python_levenshtein"] = levenshtein_version()
        return described


DEFAULT_OPTIONS = ScoringOptions()


def qa_f1_score(prediction: str, ground_truth: str, all_classes=None,
                options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return token_f1(normalize_answer_en(prediction).split(), normalize_answer_en(ground_truth).split())


def _zh_tokens(text: str) -> list[str]:
    # jieba runs on the raw text; each token is normalised after, and emptied ones dropped
    return [token for token in map(normalize_token_zh, jieba_cut(text)) if len(token) > 0]


def qa_f1_zh_score(prediction: str, ground_truth: str, all_classes=None,
                   options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return token_f1(_zh_tokens(prediction), _zh_tokens(ground_truth))


def _rouge(prediction: str, ground_truth: str, recursion: RecursionModel | None) -> float:
    try:
        return rouge_l_summary_f(prediction, ground_truth, recursion=recursion)
    except (RougeInputError, RougeRecursionError):  # upstream: a bare except returning 0.0
        return 0.0


def rouge_score(prediction: str, ground_truth: str, all_classes=None,
                options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return _rouge(prediction, ground_truth, options.rouge_model("en"))


def rouge_zh_score(prediction: str, ground_truth: str, all_classes=None,
                   options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return _rouge(" ".join(jieba_cut(prediction)), " ".join(jieba_cut(ground_truth)),
                  options.rouge_model("zh"))


def classification_score(prediction: str, ground_truth: str, all_classes: Sequence[str] | None,
                         options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    """1/|L| when the gold class is in L, the classes named in the prediction.

    L is pruned of classes that are proper substrings of the gold, walking it the way
    Python's list iterator walks a list being shortened under it: after a removal, the class
    that moves into the freed slot is skipped (so [A, AB, ABC] against gold ABC keeps AB).
    """
    if all_classes is None:
        raise DataError("classification_score needs all_classes (trec and lsht carry them)")
    matched = [name for name in all_classes if name in prediction]
    position = 0
    while position < len(matched):
        name = matched[position]
        if name in ground_truth and name != ground_truth:
            matched.remove(name)  # the first equal element, as list.remove does
        position += 1
    return 1.0 / len(matched) if ground_truth in matched else 0.0


def _fraction_equal(prediction: str, target: str) -> float:
    numbers = _DIGIT_RUNS.findall(prediction)
    right = sum(1 for number in numbers if number == target)
    return 0.0 if len(numbers) == 0 else float(right / len(numbers))


def _paragraph_id(ground_truth: str, language: str) -> str:
    found = _PARAGRAPH_ID[language].findall(ground_truth)
    if not found:
        raise DataError(f"gold answer {ground_truth!r} does not name a paragraph "
                        f"('{_PARAGRAPH_ID[language].pattern}')")
    return found[0]


def retrieval_score(prediction: str, ground_truth: str, all_classes=None,
                    options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return _fraction_equal(prediction, _paragraph_id(ground_truth, "en"))


def retrieval_zh_score(prediction: str, ground_truth: str, all_classes=None,
                       options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return _fraction_equal(prediction, _paragraph_id(ground_truth, "zh"))


def count_score(prediction: str, ground_truth: str, all_classes=None,
                options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return _fraction_equal(prediction, ground_truth)


def first_code_line(prediction: str) -> str:
    """The first line (after leading newlines) with no "`", "#" or "//" anywhere; "" if none."""
    for line in prediction.lstrip("\n").split("\n"):
        if "`" not in line and "#" not in line and "//" not in line:
            return line
    return ""


def code_sim_score(prediction: str, ground_truth: str, all_classes=None,
                   options: ScoringOptions = DEFAULT_OPTIONS) -> float:
    return fuzz_ratio(first_code_line(prediction), ground_truth, options.code_sim_backend) / 100


METRICS: dict[str, Callable[..., float]] = {
    function.__name__: function
    for function in (qa_f1_score, qa_f1_zh_score, rouge_score, rouge_zh_score, classification_score,
                     retrieval_score, retrieval_zh_score, count_score, code_sim_score)
}
