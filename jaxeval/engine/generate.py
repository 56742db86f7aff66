"""Generation: prompts batched by length rung into a cache of one kind, prefilled, then a jitted decode step.

Shapes are fixed per (batch bucket, cache bucket), so nothing recompiles per token, per prompt
length or per sampling setting: a batch of prompts is padded to a power-of-two number of rows,
and its cache gets the length-ladder rung holding the longest prompt plus the new tokens
(decode_cache.new_batch). The cache's kind (exact, int8 / fp8, streaming, SnapKV, a hybrid's)
comes from the model and runtime.kv_cache (cache_type); each kind has its own init, prefill and
step (jaxeval.engine.decode_cache). Sampling happens on device; the host gets one [rows] int32
transfer per step, dispatched one step ahead so its EOS / stop-string bookkeeping overlaps the
next step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from jaxeval.engine.bounded_kv import SnapKVCache, StreamingCache
from jaxeval.engine.buckets import generation_batches
from jaxeval.engine.decode_cache import batch_bucket, new_batch
from jaxeval.engine.hybrid_generate import HybridDecodeCache
from jaxeval.engine.kv_cache import KVCache, QuantizedKVCache
from jaxeval.engine.runtime import Runtime
from jaxeval.engine.snapkv import SnapKVMaskCache
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import is_hybrid

__all__ = ["Generation", "batch_bucket", "cache_type", "check_generate_request", "check_token_stops", "generate"]

# runtime.kv_cache's kind -> the cache generation decodes from: the bounded caches, or (bounded_kv=False,
# or on a mesh) the policy as a mask over the full cache, the reference the bounded ones are tested against
BOUNDED = {"streaming": StreamingCache, "snapkv": SnapKVCache}
FULL = {"exact": KVCache, "int8": QuantizedKVCache, "fp8": QuantizedKVCache, "streaming": KVCache,
        "snapkv": SnapKVMaskCache}

FINISH_REASONS = ("eos", "stop", "length")


@dataclasses.dataclass(frozen=True)
class Generation:
    tokens: list[int]  # new token ids; the EOS token is included when it ended the generation
    text: str  # tokens decoded (special tokens skipped), cut before the first stop string; "" without a tokenizer
    finish_reason: str  # "eos" | "stop" | "length"


def cache_type(config: ModelConfig, runtime: Runtime, bounded_kv: bool = True) -> type:
    """The cache kind a generation of this model under this runtime decodes from."""
    if is_hybrid(config):
        return HybridDecodeCache
    kind = "exact" if runtime.kv_cache is None else runtime.kv_cache.kind
    if bounded_kv and runtime.mesh is None and kind in BOUNDED:
        return BOUNDED[kind]
    return FULL[kind]


def check_generate_request(prompts, max_new_tokens, stop, temperature, top_p, seed, config: ModelConfig, tokenizer):
    """Validate a request before anything compiles -> (prompts as int32 arrays, stop strings tuple)."""
    if isinstance(prompts, (str, bytes)) or not isinstance(prompts, Sequence) and not isinstance(prompts, np.ndarray):
        raise ValueError(f"generate: prompts must be a list of token-id lists, got {type(prompts).__name__}")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
        raise ValueError(f"generate: max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if not temperature >= 0:
        raise ValueError(f"generate: temperature must be >= 0 (0 = greedy), got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"generate: top_p must be in (0, 1], got {top_p!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 32:
        raise ValueError(f"generate: seed must be an integer in [0, 2**32), got {seed!r}")
    stop = (stop,) if isinstance(stop, str) else tuple(stop or ())
    if any(not isinstance(s, str) or not s for s in stop):
        raise ValueError(f"generate: stop must be a string or a list of non-empty strings, got {stop!r}")
    if stop and tokenizer is None:
        raise ValueError("generate: stop strings need a tokenizer, and this model has none")
    arrays = []
    for i, p in enumerate(prompts):
        a = np.asarray(p)
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"generate: prompt {i} must be a non-empty 1-D list of token ids, got shape {a.shape} "
                             f"{a.dtype}")
        out = a[(a < 0) | (a >= config.vocab_size)]
        if out.size:
            raise ValueError(f"generate: prompt {i} holds token id {int(out[0])} outside the vocabulary "
                             f"[0, {config.vocab_size})")
        if a.size + max_new_tokens > config.context_limit:
            raise InputTooLongError(
                f"generate: prompt {i} has {a.size} tokens; with max_new_tokens={max_new_tokens} that is "
                f"{a.size + max_new_tokens}, beyond the model's context ({config.context_source})")
        arrays.append(a.astype(np.int32))
    return arrays, stop


def check_token_stops(stop_token_ids, min_new_tokens, max_new_tokens, vocab_size: int) -> frozenset[int]:
    """Validate the token-level stop rule -> the stop ids as a set."""
    ids = [stop_token_ids] if isinstance(stop_token_ids, (int, np.integer)) else list(stop_token_ids or ())
    if any(isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < vocab_size for t in ids):
        raise ValueError(f"generate: stop_token_ids must be token ids in [0, {vocab_size}), got {stop_token_ids!r}")
    if isinstance(min_new_tokens, bool) or not isinstance(min_new_tokens, (int, np.integer)) or \
            not 0 <= min_new_tokens <= max_new_tokens:
        raise ValueError(f"generate: min_new_tokens must be an integer in [0, max_new_tokens={max_new_tokens}], "
                         f"got {min_new_tokens!r}")
    return frozenset(int(t) for t in ids)


class _RowOutput:
    """Host-side bookkeeping of one prompt's new tokens: EOS, stop ids, stop strings, length."""

    def __init__(self, max_new_tokens, eos, stop, tokenizer, stop_ids=frozenset()):
        self.max_new_tokens, self.eos, self.stop, self.tokenizer = max_new_tokens, eos, stop, tokenizer
        self.stop_ids = stop_ids
        self.tokens: list[int] = []
        self.finish_reason: str | None = None

    def decode(self) -> str:
        if self.tokenizer is None:
            return ""
        return self.tokenizer.decode(self.tokens, skip_special_tokens=True)

    def add(self, token: int):
        self.tokens.append(token)
        if token in self.eos:
            self.finish_reason = "eos"
        elif token in self.stop_ids:
            self.finish_reason = "stop"
        elif self.stop and self.first_stop(self.decode()) is not None:
            self.finish_reason = "stop"
        elif len(self.tokens) == self.max_new_tokens:
            self.finish_reason = "length"

    def first_stop(self, text: str) -> int | None:
        """Where the earliest stop string starts in text (None when there is none)."""
        return min((i for i in (text.find(s) for s in self.stop) if i >= 0), default=None)

    def result(self) -> Generation:
        text = self.decode()
        cut = self.first_stop(text)
        return Generation(tokens=list(self.tokens), text=text if cut is None else text[:cut],
                          finish_reason=self.finish_reason)


def generate(params, config: ModelConfig, runtime: Runtime, prompts, max_new_tokens: int, *, stop=None,
             temperature: float = 0.0, top_p: float = 1.0, seed: int = 0, tokenizer=None, eos_token_ids=None,
             stop_token_ids=None, min_new_tokens: int = 0, batch_size: int = 8,
             bounded_kv: bool = True) -> list[Generation]:
    """Generate up to max_new_tokens after each prompt (a list of token-id lists of any lengths).

    runtime: how the model runs (attention backend, prefill chunk, dtype of the cache, mesh, KV-cache
    policy; jaxeval.engine.runtime.Runtime), the jitted steps' static argument.
    eos_token_ids: the ids that end a generation; by default config.eos_token_ids plus the
    tokenizer's eos. stop: strings that end it on the host; the text is cut before the first one
    (the tokens keep everything generated). stop_token_ids: ids that end it too (finish_reason
    "stop"; the id is kept in the tokens). min_new_tokens: the EOS and stop ids cannot be chosen
    before that many tokens are out (transformers' min_new_tokens). temperature 0 is greedy; otherwise temperature, then
    top_p, then a draw keyed by (seed, prompt index, position). Prompts are batched batch_size at a
    time, longest first, a batch only of prompts on one length rung with one cache rung
    (buckets.generation_batches), so each row runs with the shapes it would get alone and greedy
    output is that of one prompt at a time; each batch is padded to a power-of-two number of
    rows. Results come back in the order of `prompts`. bounded_kv: under the streaming and snapkv
    policies, decode from a cache holding only what the policy keeps (jaxeval.engine.bounded_kv);
    False: the policy as a mask over the full cache (the reference the bounded cache is tested against).
    """
    arrays, stop = check_generate_request(prompts, max_new_tokens, stop, temperature, top_p, seed, config, tokenizer)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"generate: batch_size must be a positive integer, got {batch_size!r}")
    if eos_token_ids is None:
        eos_token_ids = set(config.eos_token_ids)
        if tokenizer is not None and getattr(tokenizer, "eos_token_id", None) is not None:
            eos_token_ids.add(int(tokenizer.eos_token_id))
    eos = frozenset(int(t) for t in eos_token_ids)
    stop_ids = check_token_stops(stop_token_ids, min_new_tokens, max_new_tokens, config.vocab_size)
    suppress = None
    if min_new_tokens:
        suppress = np.zeros(config.vocab_size, np.float32)
        suppress[[t for t in eos | stop_ids if t < config.vocab_size]] = -np.inf

    kind = cache_type(config, runtime, bounded_kv)
    results: list[Generation | None] = [None] * len(arrays)
    for group in generation_batches([a.size for a in arrays], max_new_tokens, batch_size):
        rows = [_RowOutput(max_new_tokens, eos, stop, tokenizer, stop_ids) for _ in group]
        batch = new_batch(config, runtime, [arrays[i] for i in group], group, max_new_tokens, seed=seed,
                          temperature=temperature, top_p=top_p, suppress=(suppress, min_new_tokens))
        _decode(params, config, runtime, kind, batch, rows)
        for i, row in zip(group, rows):
            results[i] = row.result()
    return results


def _decode(params, config, runtime, kind, batch, rows):
    """Prefill then decode one batch into a cache of `kind`; fills rows (one _RowOutput per prompt) in place.

    Prefill writes all prompt tokens but the last and the first step feeds the last one, so prefill
    needs no head and every token comes from a decode step."""
    n = len(batch.prompts)
    upcoming, positions, cache = kind.init(config, runtime, batch).prefill(params, config, runtime, batch)
    for produced in range(1, batch.max_new_tokens + 1):
        tokens = upcoming
        if produced < batch.max_new_tokens:  # dispatch the next step before waiting for this one's tokens
            upcoming, positions, cache = cache.step(params, config, runtime, batch, tokens, positions, produced)
        new = np.asarray(tokens)  # the one device -> host transfer per step
        for row, token in zip(rows, new[:n].tolist()):
            if row.finish_reason is None:
                row.add(token)
        if all(row.finish_reason is not None for row in rows):
            break
