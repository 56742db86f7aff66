"""Generation: per-prompt bucketed prefill into a shared KV cache, then a jitted batched decode step.

Shapes are fixed per (batch bucket, cache bucket), so nothing recompiles per token, per prompt
length or per sampling setting: a batch of prompts is padded to a power-of-two number of rows,
and its KV cache [rows, L, S, KV, hd] gets S = the length-ladder rung holding the longest prompt
plus the new tokens.

- Prefill runs chunk by chunk (chunk length from the longest prompt's ladder rung; a batch holds
  one rung, buckets.generation_batches) and writes every prompt token but the last, so it needs
  no head. All rows of a batch run each chunk together (prefill_rows: rows padded to the longest
  prompt; padding past a prompt is overwritten by decoding before any query can see it), on one
  device or a mesh without a context axis; on a context-parallel mesh, for a hybrid, or when the
  rows' ropes differ, each prompt runs alone into its row of the cache (prefill_row; the row and
  the chunk start are traced).
- Decode is written for one sequence and vmapped over the rows with per-row positions, so rows of
  different lengths decode together. The first step feeds each prompt's last token. Each layer
  attends from the cache with its own new K/V seen at their slot (decode_attention reads key
  blocks straight out of the stacked cache: no copy of the cache per step), and every layer's new
  K/V are written once after the layer scan, row by row in place into the donated cache
  (decode_row.write_step): a per-layer write under vmap is a scatter over the whole cache.
  Sampling happens on device; the host gets one [rows] int32 transfer per step, dispatched one
  step ahead so its EOS / stop-string bookkeeping overlaps the next step.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.bounded_kv import (
    bounded_layout, compact_row, decode_step_bounded, new_bounded_cache, uses_bounded_cache,
)
from jaxeval.engine.buckets import chunk_size, generation_batches, length_bucket
from jaxeval.engine.decode_row import decode_row, write_step
from jaxeval.engine.hybrid_generate import decode_hybrid_step, prefill_hybrid_row
from jaxeval.engine.sampling import choose_tokens, prompt_keys
from jaxeval.engine.snapkv import snapkv_masks
from jaxeval.errors import InputTooLongError
from jaxeval.models import hybrid
from jaxeval.models.config import ModelConfig
from jaxeval.models.context import take_row, write_row
from jaxeval.models.decoder import embed_tokens, layer_forward, run_layers
from jaxeval.models.hybrid_layout import check_hybrid_mesh, is_hybrid
from jaxeval.models.kv_policy import new_kv_cache
from jaxeval.models.layer_stacks import layer_stacks
from jaxeval.models.rope import RopeTables, length_dependent, rope_key, rope_tables, row_tables
from jaxeval.models.sharding import DECODE_CACHE, constrain, host_array, replicated, zeros

FINISH_REASONS = ("eos", "stop", "length")


@dataclasses.dataclass(frozen=True)
class Generation:
    tokens: list[int]  # new token ids; the EOS token is included when it ended the generation
    text: str  # tokens decoded (special tokens skipped), cut before the first stop string; "" without a tokenizer
    finish_reason: str  # "eos" | "stop" | "length"


def batch_bucket(n: int) -> int:
    """Rows of a decode batch: the next power of two >= n."""
    rows = 1
    while rows < n:
        rows *= 2
    return rows


@functools.partial(jax.jit, static_argnames=("config", "backend", "mesh"), donate_argnums=(1, 2))
def prefill_row(params, cache_k, cache_v, chunk_ids, start, row, rope, *, config, backend, mesh=None):
    """Write the K/V of one prompt chunk into cache row `row`.

    cache_k, cache_v [B, L, S, KV, hd]; chunk_ids int [1, C] (positions start .. start + C - 1);
    start, row int scalars; rope: RopeTables of the prompt (transformers' prefill is one forward
    over the prompt). Positions past the prompt hold padding; decoding overwrites them before
    any query can see them (a query at position q sees keys <= q only).
    """
    c = chunk_ids.shape[1]
    row_cache = tuple(jax.tree.map(lambda c: jnp.swapaxes(take_row(c, row, mesh, DECODE_CACHE), 0, 1), cache)
                      for cache in (cache_k, cache_v))  # [L, 1, S, KV, hd], run_layers' layout (QuantKV leaf by leaf)
    x = embed_tokens(params, config, chunk_ids)
    _, (k_new, v_new) = run_layers(params, config, x, start + jnp.arange(c), row_cache, start, backend, mesh,
                                   cache_sharded=False, rope=rope)  # decode reads the whole sequence: kept unsplit
    cache_k, cache_v = (jax.tree.map(lambda c, n: write_row(c, jnp.swapaxes(n, 0, 1), row, start, mesh, DECODE_CACHE),
                                     cache, new) for cache, new in ((cache_k, k_new), (cache_v, v_new)))
    return constrain(cache_k, mesh, *DECODE_CACHE), constrain(cache_v, mesh, *DECODE_CACHE)


@functools.partial(jax.jit, static_argnames=("config", "backend", "mesh"), donate_argnums=(1, 2))
def prefill_rows(params, cache_k, cache_v, chunk_ids, start, rope, *, config, backend, mesh=None):
    """prefill_row for every row of the batch at once: chunk_ids int [B, C], row r's prompt tokens at
    positions start .. start + C - 1 (padding past its prompt, as prefill_row's). mesh: None, or one
    without a context axis (> 1 would need the striped token order run_layers gives a read): rows over
    data / fsdp, K/V heads over tensor, as decode_step's cache.

    cache_k, cache_v [B, L, S, KV, hd]; rope: the RopeTables every row shares. Each layer attends
    from its own slice of the cache (cache[:, layer], [B, S, KV, hd]: one layer's copy, never the
    whole cache transposed), and the chunk's K/V are written after the scan, in place.
    """
    c = chunk_ids.shape[1]
    positions = start + jnp.arange(c)
    windows = jnp.asarray(np.array(config.layer_windows, dtype=np.int32))

    def layer(x, xs, stack_config):
        lp, inv_freq, scale, window, i = xs
        layer_cache = tuple(jax.tree.map(lambda t: jax.lax.dynamic_index_in_dim(t, i, axis=1, keepdims=False), cache)
                            for cache in (cache_k, cache_v))
        return layer_forward(lp, stack_config, x, positions, (inv_freq, scale), window, layer_cache, start, backend,
                             mesh, cache_sharded=False)  # decode reads the whole sequence: kept unsplit

    x = constrain(embed_tokens(params, config, chunk_ids), mesh, "batch", "sequence", "hidden")
    news = []
    for stack in layer_stacks(config):  # (jaxeval.models.layer_stacks: the dense first layers, then the rest)
        rows = stack.rows
        xs = (params[stack.name], rope.inv_freq[rows], rope.scale[rows], windows[rows],
              jnp.arange(config.num_layers)[rows])
        x, new = jax.lax.scan(functools.partial(layer, stack_config=stack.config), x, xs)
        news.append(new)
    k_new, v_new = (jax.tree.map(lambda *parts: jnp.concatenate(parts), *(n[j] for n in news)) for j in (0, 1))

    def write(cache, new):
        return jax.lax.dynamic_update_slice(cache, jnp.swapaxes(new, 0, 1).astype(cache.dtype),
                                            (0, 0, start) + (0,) * (cache.ndim - 3))

    return (constrain(jax.tree.map(write, cache_k, k_new), mesh, *DECODE_CACHE),
            constrain(jax.tree.map(write, cache_v, v_new), mesh, *DECODE_CACHE))


@functools.partial(jax.jit, static_argnames=("config", "mesh"), donate_argnums=(1, 2))
def decode_step(params, cache_k, cache_v, tokens, positions, keys, temperature, top_p, rope, suppress=None, keep=None,
                *, config, mesh=None):
    """Feed tokens int [B] at positions int [B] (one per row); write their K/V; sample the next tokens.

    rope: RopeTables per row (inv_freq [B, L, R/2], scale [B, L]), each for that row's position + 1
    tokens: transformers recomputes a length-dependent rope at every step of a one-prompt generation.
    suppress: None, or float32 [V] added to every row's logits (-inf at the EOS and stop ids while
    fewer than min_new_tokens are out, as transformers' MinNewTokensLengthLogitsProcessor).
    keep: None, or bool [B, L, S, KV], the slots each row's layers and KV heads see (SnapKV).

    cache_k, cache_v [B, L, S, KV, hd], donated and updated in place (on a mesh: rows over
    data/fsdp, K/V heads over tensor, the sequence whole). Tokens and positions come back replicated.
    Returns (next tokens int32 [B], positions + 1, cache_k, cache_v).
    """
    logits, k_new, v_new = jax.vmap(decode_row, in_axes=(None, 0, 0, 0, 0, 0, None, 0))(
        params, cache_k, cache_v, tokens, positions, rope, config, keep)
    cache_k, cache_v = write_step(cache_k, k_new, positions), write_step(cache_v, v_new, positions)
    if suppress is not None:  # the first min_new_tokens steps: end-of-generation ids cannot be chosen
        logits = logits + suppress
    chosen = choose_tokens(logits, keys, positions, temperature, top_p)
    return (constrain(chosen, mesh, "read_rows"), constrain(positions + 1, mesh, "read_rows"),
            constrain(cache_k, mesh, *DECODE_CACHE), constrain(cache_v, mesh, *DECODE_CACHE))


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


def generate(params, config: ModelConfig, prompts, max_new_tokens: int, *, stop=None, temperature: float = 0.0,
             top_p: float = 1.0, seed: int = 0, tokenizer=None, eos_token_ids=None, stop_token_ids=None,
             min_new_tokens: int = 0, backend: str = "chunked", prefill_chunk_len: int = 2048, batch_size: int = 8,
             mesh=None, bounded_kv: bool = True) -> list[Generation]:
    """Generate up to max_new_tokens after each prompt (a list of token-id lists of any lengths).

    eos_token_ids: the ids that end a generation; by default config.eos_token_ids plus the
    tokenizer's eos. stop: strings that end it on the host; the text is cut before the first one
    (the tokens keep everything generated). stop_token_ids: ids that end it too (finish_reason
    "stop"; the id is kept in the tokens). min_new_tokens: the EOS and stop ids cannot be chosen
    before that many tokens are out (transformers' min_new_tokens). temperature 0 is greedy; otherwise temperature, then
    top_p, then a draw keyed by (seed, prompt index, position). Prompts are batched batch_size at a
    time, longest first, a batch only of prompts on one length rung with one cache rung
    (buckets.generation_batches), so each row runs with the shapes it would get alone and greedy
    output is that of one prompt at a time; each batch is padded to a power-of-two number of
    rows. Results come back in the order of `prompts`. mesh: the jaxeval mesh the params are
    sharded over (None: one device). bounded_kv: under the streaming and snapkv policies, decode
    from a cache holding only what the policy keeps (jaxeval.engine.bounded_kv); False: the policy
    as a mask over the full cache (the reference the bounded cache is tested against).
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

    results: list[Generation | None] = [None] * len(arrays)
    for group in generation_batches([a.size for a in arrays], max_new_tokens, batch_size):
        rows = [_RowOutput(max_new_tokens, eos, stop, tokenizer, stop_ids) for _ in group]
        _generate_batch(params, config, [arrays[i] for i in group], group, rows, max_new_tokens,
                        temperature=temperature, top_p=top_p, seed=seed, backend=backend,
                        prefill_chunk_len=prefill_chunk_len, mesh=mesh, suppress=(suppress, min_new_tokens),
                        bounded_kv=bounded_kv)
        for i, row in zip(group, rows):
            results[i] = row.result()
    return results


def _generate_batch(params, config, prompts, prompt_ids, rows, max_new_tokens, *, temperature, top_p, seed,
                    backend, prefill_chunk_len, mesh=None, suppress=(None, 0), bounded_kv=True):
    """Prefill then decode one batch; fills rows (one _RowOutput per prompt) in place.

    suppress: (float32 [V] logit bias or None, the number of first steps it applies to).

    Prefill writes all prompt tokens but the last; the first decode step feeds the last one and
    samples the first new token, so prefill needs no head and every token comes from decode_step.
    """
    n, b = len(prompts), batch_bucket(len(prompts))
    lengths = np.ones(b, np.int32)  # padding rows: a one-token prompt (token 0); their output is dropped
    lengths[:n] = [p.size for p in prompts]
    longest = int(lengths.max())
    cache_len = length_bucket(longest + max_new_tokens - 1)  # the last new token is never fed back
    chunk = chunk_size(length_bucket(longest), prefill_chunk_len)
    while cache_len % chunk:  # chunks must tile the cache (always true on the ladder; kept for safety)
        chunk //= 2

    dtype = params["embed"].dtype
    hybrid_model = is_hybrid(config)  # its cache: K/V and Gated DeltaNet states (jaxeval.engine.hybrid_generate)
    # streaming / snapkv: a cache of what the policy keeps, filled row by row below (policies refuse meshes, hybrids)
    bounded = bounded_kv and uses_bounded_cache(config) and not hybrid_model and mesh is None
    snapkv = config.kv_cache is not None and config.kv_cache.kind == "snapkv"
    keep = cache = None
    if hybrid_model:
        check_hybrid_mesh(config, mesh)
        cache = hybrid.new_cache(config, b, cache_len, dtype, mesh)
    elif not bounded:
        cache = tuple(new_kv_cache(config.kv_cache, (b, config.num_layers, cache_len, config.num_kv_heads, width),
                                   dtype, lambda s, d: zeros(s, d, mesh, DECODE_CACHE))
                      for width in (config.head_dim, config.value_dim))  # latent attention: an empty value cache
    if not bounded:
        cache = _prefill(params, config, cache, prompts, chunk, backend, mesh, hybrid_model, longest, b)
        keep = snapkv_masks(params, config, cache, prompts) if snapkv else None  # the compressed prompts' slots

    ids = np.zeros(b, np.int32)
    ids[:n] = prompt_ids
    if mesh is None:
        keys = prompt_keys(np.uint32(seed), jnp.asarray(ids))
    else:  # every process builds the same replicated keys
        keys = jax.jit(prompt_keys, out_shardings=replicated(mesh))(host_array(np.uint32(seed), mesh),
                                                                    host_array(ids, mesh))
    temperature, top_p = host_array(np.float32(temperature), mesh), host_array(np.float32(top_p), mesh)
    last = np.zeros(b, np.int32)
    last[:n] = [p[-1] for p in prompts]

    def device_rope(seq_lens):
        return RopeTables(*(host_array(t, mesh) for t in row_tables(config, seq_lens)))

    fixed_rope = None if length_dependent(config) else device_rope(lengths)  # the same tables at every step
    bias, suppressed_steps = suppress
    bias = None if bias is None else host_array(bias, mesh)

    def step(tokens, positions, cache, fed: int):
        """fed: tokens already decoded before this step; every row's sequence then has length + fed tokens."""
        rope = fixed_rope if fixed_rope is not None else device_rope(lengths + fed)
        step_bias = bias if fed < suppressed_steps else None
        if bounded:
            return decode_step_bounded(params, cache, tokens, positions, offsets, keys, temperature, top_p, rope,
                                       step_bias, layout=layout, config=config)
        if hybrid_model:
            return decode_hybrid_step(params, cache, tokens, positions, keys, temperature, top_p, rope, step_bias,
                                      config=config, mesh=mesh)
        chosen, positions, cache_k, cache_v = decode_step(params, *cache, tokens, positions, keys, temperature, top_p,
                                                          rope, step_bias, keep if fed else None, config=config,
                                                          mesh=mesh)  # SnapKV: the first token sees the whole prompt
        return chosen, positions, (cache_k, cache_v)

    if bounded:  # each row's first token from its whole prompt, then the row compacted into the bounded cache
        layout = bounded_layout(config, cache_len, longest, max_new_tokens)
        offsets = jnp.asarray(lengths - layout.prompt_slots)
        row_prompts = list(prompts) + [np.zeros(1, np.int32)] * (b - n)  # the padding rows' one-token prompts
        upcoming, cache = _bounded_prefill(params, config, layout, row_prompts, cache_len, chunk, backend, keys,
                                           temperature, top_p, device_rope, bias if suppressed_steps else None)
        positions = jnp.asarray(lengths)
    else:
        upcoming, positions, cache = step(host_array(last, mesh), host_array(lengths - 1, mesh), cache, 0)
    for produced in range(1, max_new_tokens + 1):
        tokens = upcoming
        if produced < max_new_tokens:  # dispatch the next step before waiting for this one's tokens
            upcoming, positions, cache = step(tokens, positions, cache, produced)
        new = np.asarray(tokens)  # the one device -> host transfer per step
        for row, token in zip(rows, new[:n].tolist()):
            if row.finish_reason is None:
                row.add(token)
        if all(row.finish_reason is not None for row in rows):
            break


def _prefill(params, config, cache, prompts, chunk, backend, mesh, hybrid_model, longest, b):
    """cache with every prompt's tokens but its last written into its row, chunk by chunk: K/V layers
    only, one rope for all rows and no context axis, every row's chunk in one step (prefill_rows); else
    row by row. b: the cache's rows (the prompts padded to a power of two)."""
    together = mesh is None or mesh.shape.get("context", 1) == 1
    if together and not hybrid_model and b > 1 and len({rope_key(config, p.size) for p in prompts}) == 1:
        padded = np.zeros((b, -(-longest // chunk) * chunk), np.int32)  # padding rows: token 0
        for r, prompt in enumerate(prompts):
            padded[r, :prompt.size] = prompt
        rope = RopeTables(*(host_array(t, mesh) for t in rope_tables(config, prompts[0].size)))
        for start in range(0, longest - 1, chunk):
            cache = prefill_rows(params, *cache, host_array(padded[:, start:start + chunk], mesh),
                                 host_array(np.int32(start), mesh), rope, config=config, backend=backend, mesh=mesh)
        return cache
    for r, prompt in enumerate(prompts):
        padded = np.zeros((1, -(-prompt.size // chunk) * chunk), np.int32)
        padded[0, :prompt.size] = prompt
        rope = RopeTables(*(host_array(t, mesh) for t in rope_tables(config, prompt.size)))
        for start in range(0, prompt.size - 1, chunk):
            chunk_ids, at, row = (host_array(a, mesh) for a in (padded[:, start:start + chunk], np.int32(start),
                                                                np.int32(r)))
            if hybrid_model:  # the prompt's tokens but its last, and no padding, enter the GDN states
                valid = jnp.int32(min(chunk, prompt.size - 1 - start))
                cache = prefill_hybrid_row(params, cache, chunk_ids, at, row, valid, rope, config=config,
                                           backend=backend, mesh=mesh)
            else:
                cache = prefill_row(params, *cache, chunk_ids, at, row, rope, config=config, backend=backend, mesh=mesh)
    return cache


def _bounded_prefill(params, config, layout, prompts, cache_len, chunk, backend, keys, temperature, top_p, device_rope,
                     bias):
    """(first new tokens int32 [B], the bounded cache (jaxeval.engine.bounded_kv) of the prompts' rows).

    Each prompt is prefilled alone into a full one-row cache of cache_len slots, SnapKV votes on it,
    its first token is decoded from the whole prompt (as in the masked form), and the row is compacted."""
    cache, first = new_bounded_cache(layout, len(prompts), config, params["embed"].dtype), []
    snapkv = config.kv_cache.kind == "snapkv"
    for r, prompt in enumerate(prompts):
        empty = tuple(jnp.zeros((1, config.num_layers, cache_len, config.num_kv_heads, config.head_dim),
                                params["embed"].dtype) for _ in range(2))
        row = _prefill(params, config, empty, [prompt], chunk, backend, None, False, int(prompt.size), 1)
        keep = snapkv_masks(params, config, row, [prompt]) if snapkv else None
        size = np.array([prompt.size], np.int32)
        chosen, _, row_k, row_v = decode_step(params, *row, jnp.asarray(prompt[-1:]), jnp.asarray(size - 1),
                                              keys[r:r + 1], temperature, top_p, device_rope(size), bias, config=config)
        cache = compact_row(cache, row_k, row_v, keep, jnp.int32(prompt.size), jnp.int32(r), layout=layout,
                            config=config)
        first.append(chosen)
    return jnp.concatenate(first), cache
