"""Teacher-forced reads: chunked prefill with a KV cache, then a float32 head at the read positions only.

Never materialises [sequence, vocab]: the trunk runs chunk by chunk (a jitted step per length
bucket, reused for every chunk), the final hidden states of the read positions are gathered as
each chunk passes, and the LM head projects only those rows, in blocks, in float32.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models.context import write_chunk
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


@functools.partial(jax.jit, static_argnames=("config", "backend", "mesh"), donate_argnums=(1, 2))
def prefill_chunk(params, cache_k, cache_v, chunk_ids, start, rope, *, config, backend, mesh=None):
    """Run one chunk of B sequences through all layers and write its K/V -> (cache_k, cache_v, x).

    cache_k, cache_v [L, B, S, KV, hd]; chunk_ids int [B, C] (every row at positions start ..);
    start int scalar; rope: RopeTables of the whole sequence (data, so a new sequence length never
    recompiles). x [B, C, D]: the chunk's final states, gathered outside (gather_rows), so the
    number of read positions never recompiles the trunk: one executable per (rows, chunk, bucket).
    On a mesh the cache keeps the rules' shardings (READ_CACHE).
    """
    c = chunk_ids.shape[1]
    x = embed_tokens(params, config, chunk_ids)
    x, (k_new, v_new) = run_layers(params, config, x, start + jnp.arange(c), (cache_k, cache_v), start, backend,
                                   mesh, rope=rope)
    # on a mesh each sequence shard of the cache writes its own part of the chunk
    cache_k, cache_v = (jax.tree.map(lambda c, n: write_chunk(c, n, start, mesh, READ_CACHE), cache, new)
                        for cache, new in ((cache_k, k_new), (cache_v, v_new)))  # leaf by leaf: QuantKV codes, scales
    return constrain(cache_k, mesh, *READ_CACHE), constrain(cache_v, mesh, *READ_CACHE), x


@functools.partial(jax.jit, static_argnames=("mesh",), donate_argnums=(2,))
def gather_rows(x, start, hidden, gather_at, *, mesh=None):
    """hidden [B, K, D] (or [K, D] for B = 1) with the rows of x [B, C, D] (positions start ..) that
    gather_at [B, K] (or [K]) asks for; -1 (or any position outside the chunk) keeps the row."""
    one = hidden.ndim == 2
    if one:
        hidden, gather_at = hidden[None], gather_at[None]
    c = x.shape[1]
    local = gather_at - start
    inside = (local >= 0) & (local < c)
    rows = jnp.take_along_axis(x, jnp.clip(local, 0, c - 1)[..., None], axis=1)  # [B, K, D]
    hidden = jnp.where(inside[..., None], rows.astype(hidden.dtype), hidden)
    return constrain(hidden[0], mesh, "read_rows", "hidden") if one else \
        constrain(hidden, mesh, "read_rows", "read_rows", "hidden")


@functools.partial(jax.jit, static_argnames=("config", "backend", "mesh"), donate_argnums=(1,))
def prefill_hybrid_chunk(params, cache, chunk_ids, start, rope, *, config, backend, mesh=None):
    """prefill_chunk for a hybrid (jaxeval.models.hybrid): cache is its HybridCache, K/V and GDN states
    after position start - 1, carried to the chunk's end. On a mesh (no context axis: hybrid_layout.
    check_hybrid_mesh) XLA partitions the layers from the weights' and the cache's shardings, which the
    outputs keep. Returns (cache, x [B, C, D])."""
    x, cache = hybrid.prefill(params, config, chunk_ids, start, cache, backend, rope)
    return hybrid.constrain_cache(cache, mesh), x


def new_read_cache(config: ModelConfig, bucket: int, dtype, mesh=None, rows: int = 1):
    """The cache a read carries from chunk to chunk: (k, v) [L, rows, bucket, KV, hd] (under an int8 /
    fp8 policy, QuantKV codes and scales), or a hybrid's HybridCache."""
    check_read(config)  # every read path starts here; SnapKV is for generation only
    if is_hybrid(config):
        check_hybrid_mesh(config, mesh)
        return hybrid.new_cache(config, rows, bucket, dtype, mesh)
    return tuple(new_kv_cache(config.kv_cache, (config.num_layers, rows, bucket, config.num_kv_heads, width), dtype,
                              lambda s, d: zeros(s, d, mesh, READ_CACHE))
                 for width in (config.head_dim, config.value_dim))  # latent attention: an empty value cache


def run_chunk(params, cache, chunk_ids, start, hidden, gather_at, rope, *, config, backend, mesh=None):
    """One prefill chunk on a cache from new_read_cache (donated) -> (cache, hidden).

    chunk_ids [B, C]; hidden [K, D] with gather_at [K] (B = 1) or [B, K, D] with [B, K] (donated)."""
    if is_hybrid(config):
        cache, x = prefill_hybrid_chunk(params, cache, chunk_ids, start, rope, config=config, backend=backend,
                                        mesh=mesh)
    else:
        cache_k, cache_v, x = prefill_chunk(params, *cache, chunk_ids, start, rope, config=config, backend=backend,
                                            mesh=mesh)
        cache = (cache_k, cache_v)
    return cache, gather_rows(x, start, hidden, gather_at, mesh=mesh)


@functools.partial(jax.jit, static_argnames=("config", "mesh"))
def read_head(params, hidden, tokens, *, config, mesh=None):
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
    return constrain(top1, mesh, "read_rows"), constrain(logprobs, mesh, "read_rows", "hidden")


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


def host_rope(config: ModelConfig, seq_len: int, mesh=None) -> RopeTables:
    """The rope tables of a seq_len-token sequence, on the device(s)."""
    return RopeTables(*(host_array(t, mesh) for t in rope_tables(config, seq_len)))


def read(params, config: ModelConfig, ids, positions, tokens, *, backend="chunked", prefill_chunk_len=2048,
         dtype=jnp.float32, mesh=None) -> ReadResult:
    """Teacher-forced read of one sequence: see jaxeval.engine.backend.ReadBackend.read.

    Ropes that depend on the sequence length (dynamic NTK, LongRoPE) take it from len(ids), as
    transformers' forward over `ids` does, whichever positions are read.
    mesh: a jaxeval mesh (jaxeval.models.mesh) the params are sharded over, or None (one device).
    """
    one_token_each = np.ndim(tokens) == 1
    ids, positions, tokens = check_read_request(ids, positions, tokens, config.vocab_size)
    n_inputs = int(positions.max())  # the last input needed is ids[max(p) - 1]
    if n_inputs > config.context_limit:
        raise InputTooLongError(f"read: {n_inputs} input tokens exceed the model's context "
                                f"({config.context_source})")
    bucket = length_bucket(n_inputs)
    chunk = chunk_size(bucket, prefill_chunk_len)
    k = positions.size
    k_pad = count_bucket(k)

    padded_ids = np.zeros((1, bucket), np.int32)
    padded_ids[0, :n_inputs] = ids[:n_inputs]
    gather_at = np.full((k_pad,), -1, np.int32)
    gather_at[:k] = positions - 1
    padded_tokens = np.zeros((k_pad, tokens.shape[1]), np.int32)
    padded_tokens[:k] = tokens

    cache = new_read_cache(config, bucket, dtype, mesh)
    hidden = zeros((k_pad, config.hidden_size), dtype, mesh, ("read_rows", "hidden"))
    gather_at = host_array(gather_at, mesh)
    rope = host_rope(config, ids.size, mesh)
    for start in range(0, n_inputs, chunk):
        cache, hidden = run_chunk(params, cache, host_array(padded_ids[:, start:start + chunk], mesh),
                                  host_array(np.int32(start), mesh), hidden, gather_at, rope, config=config,
                                  backend=backend, mesh=mesh)
    del cache
    top1, logprobs = read_head(params, hidden, host_array(padded_tokens, mesh), config=config, mesh=mesh)
    top1, logprobs = np.asarray(top1)[:k], np.asarray(logprobs)[:k]
    return ReadResult(top1=top1, logprobs=logprobs[:, 0] if one_token_each else logprobs)
