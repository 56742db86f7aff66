"""Answer parsing and text normalisation, as the official LongBench Pro evaluator does it.

- Answer area: the text after the LAST "[Answer]" when the prediction has one anywhere; only
  when it has none, the text after the last "[答案]"; else the whole prediction. Case-sensitive,
  ASCII brackets only ("[answer]" and "【答案】" are not markers). Then stripped.
- Prediction lines: the area lowercased, split on "\\n" alone, each line stripped and its
  whitespace runs collapsed to one space. Blank lines stay as "" items.
- Gold items: lowercased, stripped, whitespace collapsed.
- Summaries (T4): the WHOLE prediction lowercased and whitespace-collapsed: no answer area.
"""

from __future__ import annotations

from typing import Sequence

ANSWER_MARKERS = ("[Answer]", "[答案]")  # in priority order


def answer_area(prediction: str) -> str:
    for marker in ANSWER_MARKERS:
        position = prediction.rfind(marker)
        if position != -1:
            return prediction[position + len(marker):].strip()
    return prediction.strip()


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (str.split's notion) to one space, ends trimmed: "1 11" stays apart."""
    return " ".join(text.split())


def prediction_lines(prediction: str) -> list[str]:
    return [collapse_whitespace(line.strip()) for line in answer_area(prediction).lower().split("\n")]


def normalize_answers(answers: Sequence[str]) -> list[str]:
    return [collapse_whitespace(answer.lower().strip()) for answer in answers]


def normalize_summary(prediction: str) -> str:
    """The T4 prediction as scored: lowercased and whitespace-collapsed, "[answer]" and all."""
    return collapse_whitespace(prediction.lower().strip())
