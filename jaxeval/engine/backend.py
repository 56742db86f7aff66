"""The two interfaces benchmarks see: read(ids, positions, tokens) and generate(prompts, ...).

jaxeval.api.Model implements both; tests and other engines may implement either."""

from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence

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


class GeneratedText(Protocol):
    tokens: list[int]  # new token ids; an EOS or stop id that ended the generation is included
    text: str  # tokens decoded (special tokens skipped), cut before the first stop string
    finish_reason: str  # "eos" | "stop" | "length"


class GenerateBackend(Protocol):
    """Generation: tokenizer (or None), and

    generate(prompts, max_new_tokens, stop, temperature, top_p, seed, *, stop_token_ids,
             min_new_tokens, batch_size) -> one GeneratedText per prompt, in prompt order.

    prompts: token-id lists. Ends at the model's EOS ids (config.json, generation_config.json and
    the tokenizer's eos), at any of stop_token_ids, at the first stop string, or after
    max_new_tokens; no EOS or stop id is chosen before min_new_tokens are out. temperature 0 is
    greedy; sampled tokens depend only on (seed, prompt index, position).
    """

    tokenizer: object | None

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, stop: Sequence[str] | None = None,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, *,
                 stop_token_ids: Sequence[int] | None = None, min_new_tokens: int = 0,
                 batch_size: int = 8) -> list[GeneratedText]:
        ...
