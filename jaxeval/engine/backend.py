"""The model contract: what benchmarks, the planner and the lm-eval adapter ask of a model.

One read entry, read_many(requests, *, batch_size, share_prefixes): batching and prefix reuse are
options of it, never separately probed methods; read() of one sequence is read_many of one. Then
generate(prompts, ...), the tokenizer and the config. jaxeval.api.Model, the planner's
CountingModel (jaxeval.plan.counting) and the lm-eval adapter's EngineCalls (jaxeval.lm_eval.hosts)
implement it; tests' stand-ins may too.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol, Sequence

import numpy as np


@dataclasses.dataclass(frozen=True)
class ReadResult:
    top1: np.ndarray  # int32 [K]: the model's top-1 token id at each read position
    logprobs: np.ndarray  # float32 [K] or [K, C]: log p(tokens) at each read position


@dataclasses.dataclass(frozen=True)
class SharedReads:
    results: list  # ReadResult per request, in request order
    tokens_run: int  # input tokens actually run through the trunk
    tokens_naive: int  # input tokens of one separate read per request
    prefixes: int  # shared prefixes computed


class GeneratedText(Protocol):
    tokens: list[int]  # new token ids; an EOS or stop id that ended the generation is included
    text: str  # tokens decoded (special tokens skipped), cut before the first stop string
    finish_reason: str  # "eos" | "stop" | "length"


class LanguageModel(Protocol):
    """A model as the evaluators see it: config (jaxeval.models.config.ModelConfig), tokenizer (or
    None), max_length, read_many / read and generate."""

    config: object
    tokenizer: object | None

    @property
    def max_length(self) -> int | None:
        """Longest text read() takes (None: no bound): its last token is only predicted, so it needs
        no position of its own."""
        return self.config.context_limit + 1

    def read_many(self, requests, *, batch_size: int = 1, share_prefixes: bool = True) -> SharedReads:
        """Teacher-forced reads of (ids, positions, tokens) requests -> SharedReads, results in request order.

        ids: int [T] token ids of the whole text.
        positions: int [K], each in [1, T): the prediction for ids[p] is the model's output
            after reading ids[:p].
        tokens: int [K] or [K, C]: the tokens whose log-probabilities are returned.
        batch_size: sequences read together per step (where the model batches; the results are a
            separate read's, float32 noise apart). share_prefixes: requests sharing a token prefix
            may run it once (the results bit-identical to separate reads). Neither changes a request.
        """
        ...

    def read(self, ids, positions, tokens) -> ReadResult:
        """Teacher-forced read of one sequence (see read_many)."""
        return self.read_many([(ids, positions, tokens)]).results[0]

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int, stop: Sequence[str] | None = None,
                 temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, *,
                 stop_token_ids: Sequence[int] | None = None, min_new_tokens: int = 0,
                 batch_size: int = 8) -> list[GeneratedText]:
        """One GeneratedText per token-id prompt, in prompt order.

        Ends at the model's EOS ids (config.json, generation_config.json and the tokenizer's eos), at
        any of stop_token_ids, at the first stop string, or after max_new_tokens; no EOS or stop id is
        chosen before min_new_tokens are out. temperature 0 is greedy; sampled tokens depend only on
        (seed, prompt index, position).
        """
        ...
