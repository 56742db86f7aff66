"""RULER's scoring (scripts/eval/evaluate.py postprocess_pred, scripts/eval/synthetic/constants.py
string_match_all / string_match_part), with its float arithmetic kept: per-row values summed,
divided by the row count, times 100, rounded to 2 places."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f]")


def postprocess(prediction: str) -> str:
    """strip, every [\\x00-\\x1f] (newline and tab included) to "\\n", strip again."""
    return _CONTROL.sub("\n", prediction.strip()).strip()


def row_all(prediction: str, references: list[str]) -> float:
    """string_match_all's row value: the share of references found (case-insensitive substring)."""
    return sum([1.0 if r.lower() in prediction.lower() else 0.0 for r in references]) / len(references)


def row_part(prediction: str, references: list[str]) -> float:
    """string_match_part's row value: 1 if any reference is found."""
    return max([1.0 if r.lower() in prediction.lower() else 0.0 for r in references])


ROW = {"string_match_all": row_all, "string_match_part": row_part}


def task_score(metric: str, predictions: list[str], references: list[list[str]]) -> float:
    """The official task score of cleaned predictions."""
    return round(sum([ROW[metric](p, r) for p, r in zip(predictions, references)]) / len(predictions) * 100, 2)


def nulls(predictions: list[str]) -> str:
    """evaluate.py's Nulls column: "empty/total" over cleaned predictions."""
    return f"{sum(len(p) == 0 for p in predictions)}/{len(predictions)}"
