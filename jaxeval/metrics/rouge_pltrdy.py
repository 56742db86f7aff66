"""ROUGE-L F as the PyPI package `rouge` 1.0.1 (pltrdy) computes it with its defaults.

LongBench v1 and LongBench Pro both score summaries with that package, and it differs from
every other ROUGE (Google rouge-score, rouge_chinese): "sentences" are split on "." only,
words on single spaces, nothing is normalised, counts are of distinct words
(exclusive=True), the LCS is a summary-level union of word sets, and F carries a 1e-8 in
its denominator. Matching their numbers means matching all of that. Reference: pltrdy/rouge
1.0.1, rouge/rouge.py Rouge.get_scores (avg=False) over rouge/rouge_score.py
rouge_l_summary_level (docs/provenance.md#rouge).

Upstream reconstructs each LCS recursively, so a long sentence pair overflows Python's
recursion limit; the benchmarks catch the RecursionError and score 0. The walk here is
iterative and raises RougeRecursionError at the same point when given a RecursionModel: the
levels the caller's stack leaves to the walk, and what the Python version adds per call
(`recursion_models`).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence


class RougeInputError(ValueError):
    """The hypothesis or the reference has no sentence ("" or only dots): the package raises."""


class RougeRecursionError(RecursionError):
    """The package's recursive LCS walk would exceed the recursion limit for this sentence pair."""


def rouge_sentences(text: str) -> list[str]:
    """Pieces between "." characters, each with its whitespace collapsed.

    Empty pieces are dropped before collapsing, so a whitespace-only piece survives as "".
    """
    return [" ".join(piece.split()) for piece in text.split(".") if len(piece) > 0]


def lcs_prefix_rows(ref_words: Sequence[str], hyp_words: Sequence[str]) -> list[int]:
    """The LCS table of the two word lists, one bit vector per reference prefix.

    Bit-parallel LCS (Hyyrö's row update): row i has bit j clear where the LCS of
    ref_words[:i] and hyp_words[:j+1] grows at column j, so the table entry is
    T[i][j] = j - popcount(row_i & (2**j - 1)). Python's big ints make each row a few
    operations, instead of a loop over the hypothesis.
    """
    positions: dict[str, int] = {}
    for j, word in enumerate(hyp_words):
        positions[word] = positions.get(word, 0) | (1 << j)
    full = (1 << len(hyp_words)) - 1
    row, rows = full, [full]
    for word in ref_words:
        matches = row & positions.get(word, 0)
        row = ((row + matches) | (row - matches)) & full
        rows.append(row)
    return rows


def lcs_walk(ref_words: Sequence[str], hyp_words: Sequence[str]) -> tuple[set[str], int]:
    """The words of the one LCS the package reconstructs, and the length of its walk.

    The walk starts at the end of both sequences; on a mismatch it drops a reference word
    only when that keeps a strictly longer LCS, else a hypothesis word (this tie-break
    decides which words enter the union). Returns (words, moves); the package nests
    moves + 1 calls to make this walk.
    """
    rows = lcs_prefix_rows(ref_words, hyp_words)

    def table(i: int, j: int) -> int:  # LCS length of ref_words[:i] and hyp_words[:j]
        return j - (rows[i] & ((1 << j) - 1)).bit_count()

    words: set[str] = set()
    i, j, moves = len(ref_words), len(hyp_words), 0
    while i > 0 and j > 0:
        if ref_words[i - 1] == hyp_words[j - 1]:
            words.add(ref_words[i - 1])
            i, j = i - 1, j - 1
        elif table(i - 1, j) > table(i, j - 1):
            i -= 1
        else:
            j -= 1
        moves += 1
    return words, moves


@dataclasses.dataclass(frozen=True)
class RecursionModel:
    """How deep, in recursion-limit units, upstream's recursive LCS walk reaches for a pair.

    Call k (1-based) of the nested `_recon` calls sits at depth k, and while it runs it briefly
    goes deeper: CPython counts C-level comparisons against the same limit on 3.8-3.11. The
    walk raises RecursionError when k + extra(k) > slots for some call, where extra(k) is
    - bottom: the last call (i == 0 or j == 0), which only compares ints;
    - match: a call whose words are equal (a str comparison);
    - mismatch: a call that looks up table[i - 1, j] and table[i, j - 1]: the dict compares
      the fresh tuple key with the stored one, one level;
    - mismatch_large: the same where i or j exceeds 256: the tuple's int elements are then
      not the cached small-int objects, and comparing them is one more nested level.
    3.11 specialises int and str comparisons (no check) but not dict-key comparisons; 3.12+
    counts C recursion separately. Measured against the official LongBench Pro evaluator and the
    official LongBench v1 eval.py on CPython 3.8-3.13 (see both benchmarks' recursion tests).
    """

    slots: int
    bottom: int = 0
    match: int = 0
    mismatch: int = 0
    mismatch_large: int = 0

    def depth(self, ref_words: Sequence[str], hyp_words: Sequence[str]) -> int:
        """max_k (k + extra(k)) over the calls of the walk on this sentence pair."""
        rows = lcs_prefix_rows(ref_words, hyp_words)

        def table(i: int, j: int) -> int:
            return j - (rows[i] & ((1 << j) - 1)).bit_count()

        i, j, call, deepest = len(ref_words), len(hyp_words), 1, 0
        while i > 0 and j > 0:
            if ref_words[i - 1] == hyp_words[j - 1]:
                deepest = max(deepest, call + self.match)
                i, j = i - 1, j - 1
            else:
                deepest = max(deepest, call + (self.mismatch_large if max(i, j) > 256 else self.mismatch))
                if table(i - 1, j) > table(i, j - 1):
                    i -= 1
                else:
                    j -= 1
            call += 1
        return max(deepest, call + self.bottom)

    def may_exceed(self, moves: int) -> bool:
        """Whether a walk of `moves` moves could go beyond the slots: its depth is at most
        moves + 1 plus the largest extra, so a shorter walk needs no `depth`."""
        return moves + 1 + max(self.bottom, self.match, self.mismatch, self.mismatch_large) > self.slots


# Extra levels (bottom, match, mismatch, mismatch_large) each CPython family adds per call of
# the walk. They belong to the interpreter and the rouge package, not to the caller: the same
# values fit the official LongBench Pro evaluator (CPython 3.8-3.13) and the official
# LongBench v1 eval.py (3.8-3.13), whose stacks differ only in the levels left (slots).
PYTHON_RECURSION_EXTRAS: dict[str, tuple[int, int, int, int]] = {
    "python3.11": (0, 0, 1, 2),
    "python3.12+": (0, 0, 0, 0),
    "python3.8-3.10": (1, 1, 1, 2),
}


def recursion_models(slots: int) -> dict[str, RecursionModel | None]:
    """One RecursionModel per CPython family for a caller that leaves `slots` levels to the walk,
    and "none" (None): unbounded recursion."""
    models: dict[str, RecursionModel | None] = {
        name: RecursionModel(slots, *extras) for name, extras in PYTHON_RECURSION_EXTRAS.items()}
    models["none"] = None
    return models


def rouge_l_summary_f(hypothesis: str, reference: str, recursion: RecursionModel | None = None) -> float:
    """ROUGE-L F of `hypothesis` against `reference`, as `Rouge().get_scores(h, r)` reports it.

    recursion: how deep the caller's Python lets the package's recursive walk go (None: no
    limit). Raises RougeInputError or RougeRecursionError where the package raises.
    """
    hyp_sentences, ref_sentences = rouge_sentences(hypothesis), rouge_sentences(reference)
    if not hyp_sentences or not ref_sentences:
        raise RougeInputError("Collections must contain at least 1 sentence.")
    hyp_words = [sentence.split(" ") for sentence in hyp_sentences]
    ref_words = [sentence.split(" ") for sentence in ref_sentences]
    m = len({word for words in ref_words for word in words})  # distinct reference words
    n = len({word for words in hyp_words for word in words})  # distinct hypothesis words

    union: set[str] = set()
    for ref in ref_words:
        for hyp in hyp_words:
            words, moves = lcs_walk(ref, hyp)
            if (recursion is not None and recursion.may_exceed(moves)
                    and (depth := recursion.depth(ref, hyp)) > recursion.slots):
                raise RougeRecursionError(f"LCS walk reaches depth {depth}, beyond the {recursion.slots} available")
            union |= words
    llcs = len(union)
    recall, precision = llcs / m, llcs / n
    return 2.0 * ((precision * recall) / (precision + recall + 1e-8))
