"""From character spans to token positions: `text` mode (the model's tokenizer) and stored ids.

text mode tokenizes the item's text as the tokenizer does by default (a BOS, if it adds one,
is a token with an empty offset at the start) and maps each span through the offset mapping,
so any added special token shifts positions correctly without knowing about it. A span is
aligned when its first character is the first character of a token; it then covers every
non-empty token that overlaps it. A span at position 0 cannot be predicted and is unaligned.

Stored ids (`--mode auto`) are the `qwen_*` ids of the published items: used when the model's
tokenizer decodes them back to exactly the text (which a different vocabulary cannot do);
spans are mapped by decoding prefixes of the ids.
"""

from __future__ import annotations

import bisect
import dataclasses
from typing import Sequence

import numpy as np

TEXT_MODE, STORED_IDS_MODE = "text", "stored_ids"
MODES = ("auto", TEXT_MODE)  # what a user may ask for


@dataclasses.dataclass(frozen=True)
class Alignment:
    ids: np.ndarray  # int32 [T]: the sequence the model reads
    span_positions: tuple[tuple[int, ...] | None, ...]  # per span: its token positions, None if unaligned
    mode: str  # TEXT_MODE or STORED_IDS_MODE


def align_text(tokenizer, text: str, spans: Sequence[tuple[int, int]]) -> Alignment:
    """Tokenize `text` with the model's tokenizer and map each [start, end) span to its tokens."""
    encoding = tokenizer(text, return_offsets_mapping=True)
    ids = np.asarray(encoding["input_ids"], dtype=np.int32)
    # Only tokens that cover characters: added special tokens have empty (0, 0) offsets.
    covering = [(start, end, index) for index, (start, end) in enumerate(encoding["offset_mapping"])
                if end > start]
    starts = [start for start, _, _ in covering]
    positions = []
    for span_start, span_end in spans:
        first = bisect.bisect_left(starts, span_start)
        if first == len(covering) or starts[first] != span_start or covering[first][2] == 0:
            positions.append(None)
            continue
        # Byte-level tokens of one multi-byte character share its offsets: bisect_left took the
        # first of them, and the loop below keeps the rest, in order.
        last = bisect.bisect_left(starts, span_end)
        positions.append(tuple(index for _, _, index in covering[first:last]))
    return Alignment(ids=ids, span_positions=tuple(positions), mode=TEXT_MODE)


def stored_ids_problem(tokenizer, text: str, stored_ids: Sequence[int] | None) -> str | None:
    """Why the stored ids cannot be fed to this model (None when they can)."""
    if not stored_ids:
        return "the items carry no qwen_* token ids"
    if max(stored_ids) >= len(tokenizer) or min(stored_ids) < 0:
        return "the stored qwen_* ids lie outside the model's vocabulary"
    if _decode(tokenizer, stored_ids) != text:
        return "the model's tokenizer does not decode the stored qwen_* ids to the text"
    return None


def align_stored_ids(tokenizer, text: str, stored_ids: Sequence[int],
                     spans: Sequence[tuple[int, int]]) -> Alignment:
    """Map spans onto stored ids (checked by stored_ids_problem first) by decoding id prefixes.

    As in text mode, a span must start at a token boundary and covers the tokens up to the
    first one that reaches its end.
    """
    ids = np.asarray(stored_ids, dtype=np.int32)
    positions = []
    for span_start, span_end in spans:
        first = _ids_decoding_to(tokenizer, ids, text[:span_start])
        if not first:  # None: not a token boundary; 0: position 0 cannot be predicted
            positions.append(None)
            continue
        end = _first_ids_covering(tokenizer, ids, text[:span_end], first + 1)
        positions.append(tuple(range(first, end)))
    return Alignment(ids=ids, span_positions=tuple(positions), mode=STORED_IDS_MODE)


def _decode(tokenizer, ids: Sequence[int]) -> str:
    return tokenizer.decode([int(i) for i in ids], skip_special_tokens=False,
                            clean_up_tokenization_spaces=False)


def _count_reaching(tokenizer, ids: np.ndarray, chars: int) -> int:
    """About the fewest ids that decode to at least `chars` characters (binary search).

    Decoded length grows with the prefix up to one replacement character inside a split
    multi-byte character, so the answer is exact within a step or two; callers check.
    """
    low, high = 0, len(ids)
    while low < high:
        middle = (low + high) // 2
        if len(_decode(tokenizer, ids[:middle])) < chars:
            low = middle + 1
        else:
            high = middle
    return low


def _ids_decoding_to(tokenizer, ids: np.ndarray, prefix: str) -> int | None:
    """The number of ids that decode exactly to `prefix`, or None (prefix ends inside a token).

    The largest such count wins, so zero-width tokens stay before the span."""
    near = _count_reaching(tokenizer, ids, len(prefix))
    for count in range(min(len(ids), near + 2), max(-1, near - 3), -1):
        if _decode(tokenizer, ids[:count]) == prefix:
            return count
    return None


def _first_ids_covering(tokenizer, ids: np.ndarray, prefix: str, at_least: int) -> int:
    """The fewest ids (at least `at_least`) whose decoding starts with `prefix`."""
    count = max(at_least, _count_reaching(tokenizer, ids, len(prefix)) - 2)
    while count < len(ids) and not _decode(tokenizer, ids[:count]).startswith(prefix):
        count += 1
    return count
