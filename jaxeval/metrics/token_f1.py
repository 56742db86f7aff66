"""Token-overlap F1 and the answer normalisations of SQuAD-style QA scoring (English, Chinese).

The English normalisation is the SQuAD one LongBench and others copy: lowercase, delete ASCII
punctuation (delete, not replace: "U.S.A." -> "usa"), drop the words a/an/the, collapse
whitespace. The Chinese one (LongBench's qa_f1_zh) normalises each jieba token: lowercase,
delete ASCII and the Chinese punctuation below, delete whitespace.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

ASCII_PUNCTUATION = frozenset(string.punctuation)
# As LongBench's metrics write it: "》" is in it and "《" is not; the last character is an
# ASCII full stop. Do not "fix" it; scores depend on it.
CHINESE_PUNCTUATION = ("！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』"
                       "【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿–—‘’‛“”„‟…‧﹏.")
_ZH_DELETED = ASCII_PUNCTUATION | frozenset(CHINESE_PUNCTUATION)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer_en(text: str) -> str:
    """Lowercase, delete ASCII punctuation, replace whole-word articles by a space, collapse spaces."""
    text = "".join(ch for ch in text.lower() if ch not in ASCII_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def normalize_token_zh(token: str) -> str:
    """Lowercase, delete ASCII and Chinese punctuation, delete all whitespace."""
    text = "".join(ch for ch in token.lower() if ch not in _ZH_DELETED)
    return "".join(text.split())


def token_f1(prediction_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    """F1 of the multiset overlap. Returns the int 0 when nothing overlaps, as the original does
    (it shows in reprs only: every caller takes a max starting from 0.0)."""
    common = Counter(prediction_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0
    precision = 1.0 * same / len(prediction_tokens)
    recall = 1.0 * same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)
