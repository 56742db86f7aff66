"""The one interface benchmarks see: anything with read(ids, positions, tokens)."""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np


@dataclasses.dataclass(frozen=True)
class ReadResult:
    top1: np.ndarray  # int32 [K]: the model's top-1 token id at each read position
    logprobs: np.ndarray  # float32 [K] or [K, C]: log p(tokens) at each read position


class ReadBackend(Protocol):
    def read(self, ids, positions, tokens) -> ReadResult:
        """Teacher-forced read of one sequence.

        ids: int [T] token ids of the whole text.
        positions: int [K], each in [1, T): the prediction for ids[p] is the model's output
            after reading ids[:p].
        tokens: int [K] or [K, C]: the tokens whose log-probabilities are returned.
        """
        ...
