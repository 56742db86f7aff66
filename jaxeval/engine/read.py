"""Teacher-forced reads: chunked prefill with a KV cache, then a float32 head at the read positions only.

Never materialises [sequence, vocab]: the trunk runs chunk by chunk (a jitted step per length
bucket, reused for every chunk), the final hidden states of the read positions are gathered as
each chunk passes, and the LM head projects only those rows, in blocks, in float32.

The one read loop is prefill_rows (rows >= 1 right-padded sequences over one cache, gathering
the hidden rows asked for); read_rows puts the head after it. A single read is a batch of one;
batching (batch_read), prefix reuse (prefix_reuse) and final states (states) call the same loop.
Every jitted step takes the run's Runtime (jaxeval.engine.runtime) as its static argument.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.runtime import Runtime
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models import hybrid
from jaxeval.models.decoder import embed_tokens, final_logits, run_layers
from jaxeval.models.hybrid_layout import check_hybrid_mesh, is_hybrid
from jaxeval.models.kv_policy import check_read, new_kv_cache
from jaxeval.models.rope import RopeTables, rope_tables
from jaxeval.models.sharding import READ_CACHE, constrain, host_array, zeros

HEAD_BLOCK_BYTES = 32 * 2 ** 20  # float32 logits of one block of LM-head rows, [rows, vocab], at most about this
HEAD_ROWS = (128, 1024)  # the fewest and the most rows per block (a power of two)


def head_rows(k: int, vocab_size: int) -> int:
    """Rows of the LM head projected at once: as many as fit HEAD_BLOCK_BYTES of float32 logits,
    within HEAD_ROWS and k (a power of two). Larger blocks make larger matmuls (measured on CPU:
    the 57M Llama's head over 8,192 rows took 0.79x the time with 256-row blocks as with 64, the
    same bits); small ones keep [K, vocab] from ever being built. Every block reads the whole
    [hidden, vocab] weight, so the fewest rows are 128 whatever the vocabulary: at 64 rows Gemma 3's
    262k-vocabulary head (671 MB of float32 weight) was bound by reading it (128 rows: 0.66x the
    time, issue 27); its blocks then hold 128 MiB of logits (Llama 3's 128k: 64 MiB)."""
    rows = HEAD_ROWS[0]
    while rows * 2 <= HEAD_ROWS[1] and rows * 2 * vocab_size * 4 <= HEAD_BLOCK_BYTES:
        rows *= 2
    return min(rows, k)


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1, 2))
def prefill_chunk(params, cache_k, cache_v, chunk_ids, start, rope, *, config, runtime):
    """Run one chunk of B sequences through all layers and write its K/V -> (cache_k, cache_v, x).

    cache_k, cache_v [L, B, S, KV, hd]; chunk_ids int [B, C] (every row at positions start ..);
    start int scalar; rope: RopeTables of the whole sequence (data, so a new sequence length never
    recompiles). x [B, C, D]: the chunk's final states, gathered outside (gather_rows), so the
    number of read positions never recompiles the trunk: one executable per (rows, chunk, bucket).
    On a mesh the cache keeps the rules' shardings (READ_CACHE).
    """
    mesh = runtime.mesh
    c = chunk_ids.shape[1]
    x = embed_tokens(params, config, chunk_ids)
    # each layer writes its K/V into the donated cache in place, where attention reads them (run_layers)
    x, (cache_k, cache_v) = run_layers(params, config, x, start + jnp.arange(c), (cache_k, cache_v), start,
                                       runtime.attention, mesh, rope=rope, policy=runtime.kv_cache)
    return constrain(cache_k, mesh, *READ_CACHE), constrain(cache_v, mesh, *READ_CACHE), x


@functools.partial(jax.jit, static_argnames=("runtime",), donate_argnums=(2,))
def gather_rows(x, start, hidden, gather_at, *, runtime):
    """hidden [B, K, D] with the rows of x [B, C, D] (positions start ..) that gather_at [B, K] asks
    for; -1 (or any position outside the chunk) keeps the row."""
    c = x.shape[1]
    local = gather_at - start
    inside = (local >= 0) & (local < c)
    rows = jnp.take_along_axis(x, jnp.clip(local, 0, c - 1)[..., None], axis=1)  # [B, K, D]
    hidden = jnp.where(inside[..., None], rows.astype(hidden.dtype), hidden)
    return constrain(hidden, runtime.mesh, "read_rows", "read_rows", "hidden")


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def prefill_hybrid_chunk(params, cache, chunk_ids, start, rope, *, config, runtime):
    """prefill_chunk for a hybrid (jaxeval.models.hybrid): cache is its HybridCache, K/V and GDN states
    after position start - 1, carried to the chunk's end. On a mesh (no context axis: hybrid_layout.
    check_hybrid_mesh) XLA partitions the layers from the weights' and the cache's shardings, which the
    outputs keep. Returns (cache, x [B, C, D])."""
    x, cache = hybrid.prefill(params, config, chunk_ids, start, cache, runtime.attention, rope, mesh=runtime.mesh)
    return hybrid.constrain_cache(cache, runtime.mesh), x


def new_read_cache(config: ModelConfig, runtime: Runtime, bucket: int, rows: int = 1):
    """The cache a read carries from chunk to chunk: (k, v) [L, rows, bucket, KV, hd] (under an int8 /
    fp8 policy, runtime.kv_cache, QuantKV codes and scales), or a hybrid's HybridCache."""
    check_read(runtime.kv_cache)  # every read path starts here; SnapKV is for generation only
    dtype, mesh = runtime.jnp_dtype, runtime.mesh
    if is_hybrid(config):
        check_hybrid_mesh(config, mesh)
        return hybrid.new_cache(config, rows, bucket, dtype, mesh)
    return tuple(new_kv_cache(runtime.kv_cache, (config.num_layers, rows, bucket, config.num_kv_heads, width),
                              dtype, lambda s, d: zeros(s, d, mesh, READ_CACHE))
                 for width in (config.head_dim, config.value_dim))  # latent attention: an empty value cache


def run_chunk(params, cache, chunk_ids, start, hidden, gather_at, rope, *, config, runtime):
    """One prefill chunk on a cache from new_read_cache (donated) -> (cache, hidden).

    chunk_ids [B, C]; hidden [B, K, D] (donated) with gather_at [B, K]."""
    if is_hybrid(config):
        cache, x = prefill_hybrid_chunk(params, cache, chunk_ids, start, rope, config=config, runtime=runtime)
    else:
        cache_k, cache_v, x = prefill_chunk(params, *cache, chunk_ids, start, rope, config=config, runtime=runtime)
        cache = (cache_k, cache_v)
    return cache, gather_rows(x, start, hidden, gather_at, runtime=runtime)


def prefill_rows(params, config: ModelConfig, runtime: Runtime, ids: np.ndarray, gather_at: np.ndarray, rope, *,
                 end: int, cache=None, begin: int = 0):
    """The read loop: ids[:, begin:end] chunk by chunk over the cache -> (cache, hidden [B, K, D]).

    ids int32 [B, bucket]: B >= 1 right-padded sequences (the cache's length is the bucket, the
    chunk length chunk_size(bucket, runtime.prefill_chunk)); gather_at int32 [B, K]: per hidden row
    the token index whose last-layer state it takes (-1: none, a zero row). cache: None (a new one)
    or one holding positions < begin (a shared prefix's). Only the rows and the cache come back,
    never [B, T, D]."""
    rows, bucket = ids.shape
    chunk = chunk_size(bucket, runtime.prefill_chunk)
    mesh = runtime.mesh
    if cache is None:
        cache = new_read_cache(config, runtime, bucket, rows)
    hidden = zeros((rows, gather_at.shape[1], config.hidden_size), runtime.jnp_dtype, mesh,
                   ("read_rows", "read_rows", "hidden"))
    gather_at = host_array(gather_at, mesh)
    for start in range(begin, end, chunk):
        cache, hidden = run_chunk(params, cache, host_array(ids[:, start:start + chunk], mesh),
                                  host_array(np.int32(start), mesh), hidden, gather_at, rope, config=config,
                                  runtime=runtime)
    return cache, hidden


@functools.partial(jax.jit, static_argnames=("config", "runtime"))
def read_head(params, hidden, tokens, *, config, runtime):
    """hidden [K, D], tokens int [K, C] -> top-1 int32 [K], log-probs float32 [K, C]."""
    k, d = hidden.shape
    rows = head_rows(k, config.vocab_size)

    def block(args):
        h, t = args
        logits = final_logits(params, config, h)  # [rows, V] float32
        lse = jax.nn.logsumexp(logits, axis=-1, keepdims=True)
        top1 = jnp.argmax(logits, axis=-1).astype(jnp.int32)
        return top1, jnp.take_along_axis(logits, t, axis=-1) - lse

    top1, logprobs = jax.lax.map(block, (hidden.reshape(k // rows, rows, d), tokens.reshape(k // rows, rows, -1)))
    top1, logprobs = top1.reshape(k), logprobs.reshape(k, -1)
    return constrain(top1, runtime.mesh, "read_rows"), constrain(logprobs, runtime.mesh, "read_rows", "hidden")


def check_read_request(ids, positions, tokens, vocab_size: int):
    """Validate and normalise a read request -> (ids int32 [T], positions int32 [K], tokens int32 [K, C])."""
    ids = np.asarray(ids)
    positions = np.asarray(positions)
    tokens = np.asarray(tokens)
    if ids.ndim != 1 or ids.size < 2 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"read: ids must be a 1-D integer array of length >= 2, got shape {ids.shape} {ids.dtype}")
    if positions.ndim != 1 or positions.size == 0 or not np.issubdtype(positions.dtype, np.integer):
        raise ValueError(f"read: positions must be a non-empty 1-D integer array, got shape {positions.shape}")
    bad = positions[(positions < 1) | (positions >= ids.size)]
    if bad.size:
        raise ValueError(f"read: position {int(bad[0])} is outside [1, {ids.size}) (position 0 has no prediction)")
    if tokens.ndim not in (1, 2) or tokens.shape[0] != positions.size or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"read: tokens must be an integer [K] or [K, C] array with K={positions.size}, got shape "
                         f"{tokens.shape} {tokens.dtype}")
    if tokens.ndim == 1:
        tokens = tokens[:, None]
    for name, arr in (("ids", ids), ("tokens", tokens)):
        out = arr[(arr < 0) | (arr >= vocab_size)]
        if out.size:
            raise ValueError(f"read: {name} holds token id {int(out[0])} outside the vocabulary [0, {vocab_size})")
    return ids.astype(np.int32), positions.astype(np.int32), tokens.astype(np.int32)


@dataclasses.dataclass(frozen=True)
class ReadRequest:
    """One checked read request (check_requests)."""
    index: int  # its place among the requests
    ids: np.ndarray  # int32 [T]
    positions: np.ndarray  # int32 [K]
    tokens: np.ndarray  # int32 [K, C]
    one_token_each: bool  # tokens came as [K]: each result's log-probs are [K]
    n_inputs: int  # max(positions): the inputs this read needs


def check_requests(config: ModelConfig, requests) -> list[ReadRequest]:
    """Each (ids, positions, tokens) request checked (check_read_request) and within the model's context."""
    checked = []
    for index, (ids, positions, tokens) in enumerate(requests):
        one = np.ndim(tokens) == 1
        ids, positions, tokens = check_read_request(ids, positions, tokens, config.vocab_size)
        n_inputs = int(positions.max())  # the last input needed is ids[max(p) - 1]
        if n_inputs > config.context_limit:
            raise InputTooLongError(f"read: {n_inputs} input tokens exceed the model's context "
                                    f"({config.context_source})")
        checked.append(ReadRequest(index, ids, positions, tokens, one, n_inputs))
    return checked


def host_rope(config: ModelConfig, seq_len: int, mesh=None) -> RopeTables:
    """The rope tables of a seq_len-token sequence, on the device(s)."""
    return RopeTables(*(host_array(t, mesh) for t in rope_tables(config, seq_len)))


def batch_rows(n: int) -> int:
    """Rows of a read batch of n sequences: the next power of two >= n."""
    rows = 1
    while rows < n:
        rows *= 2
    return rows


def read_rows(params, config: ModelConfig, runtime: Runtime, batch: list[ReadRequest], *, bucket: int | None = None,
              cache=None, begin: int = 0) -> list[ReadResult]:
    """The requests of batch read together (one length rung and rope key; prefill_rows then one head
    over every read row) -> a ReadResult each. Padding after a sequence's end sits at later positions,
    so causal attention never lets it reach a read position; a padding row reads nothing.
    bucket, cache, begin: a shared prefix's cache length, its cache and where it ends (prefix_reuse)."""
    rows = batch_rows(len(batch))
    longest = max(r.n_inputs for r in batch)
    bucket = bucket or length_bucket(longest)
    k_pad = count_bucket(max(r.positions.size for r in batch))
    width = max(r.tokens.shape[1] for r in batch)

    padded_ids = np.zeros((rows, bucket), np.int32)
    gather_at = np.full((rows, k_pad), -1, np.int32)
    tokens = np.zeros((rows, k_pad, width), np.int32)
    for row, r in enumerate(batch):
        padded_ids[row, :r.n_inputs] = r.ids[:r.n_inputs]
        gather_at[row, :r.positions.size] = r.positions - 1
        tokens[row, :r.positions.size, :r.tokens.shape[1]] = r.tokens

    # Ropes that depend on the sequence length (dynamic NTK, LongRoPE) take it from len(ids), as
    # transformers' forward over ids does; one rope_key per batch, so the first row's tables are every row's.
    rope = host_rope(config, batch[0].ids.size, runtime.mesh)
    cache, hidden = prefill_rows(params, config, runtime, padded_ids, gather_at, rope, end=longest, cache=cache,
                                 begin=begin)
    del cache
    top1, logprobs = read_head(params, hidden.reshape(rows * k_pad, config.hidden_size),
                               host_array(tokens.reshape(rows * k_pad, width), runtime.mesh), config=config,
                               runtime=runtime)
    top1 = np.asarray(top1).reshape(rows, k_pad)
    logprobs = np.asarray(logprobs).reshape(rows, k_pad, width)
    out = []
    for row, r in enumerate(batch):
        values = logprobs[row, :r.positions.size, :r.tokens.shape[1]]
        out.append(ReadResult(top1=top1[row, :r.positions.size], logprobs=values[:, 0] if r.one_token_each else values))
    return out


def read(params, config: ModelConfig, runtime: Runtime, ids, positions, tokens) -> ReadResult:
    """Teacher-forced read of one sequence (a batch of one): see jaxeval.engine.backend.LanguageModel.read.

    runtime: how it runs (attention, prefill chunk, dtype, mesh the params are sharded over, KV policy).
    """
    return read_rows(params, config, runtime, check_requests(config, [(ids, positions, tokens)]))[0]
