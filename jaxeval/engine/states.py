"""Final hidden states at chosen token positions: the read path with the final norm in place of the LM head.

Sentence embeddings (jaxeval.embedding) pool these; the trunk runs exactly as a teacher-forced
read runs it (chunked prefill with a KV cache, one jitted step per length bucket, any attention
backend, on a mesh or one device), so embeddings and reads share one engine.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.read import host_rope, new_read_cache, run_chunk
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models.decoder import final_norm
from jaxeval.models.sharding import constrain, host_array, zeros


@functools.partial(jax.jit, static_argnames=("config", "mesh"))
def _normed(params, hidden, *, config, mesh=None):
    """hidden [K, D] (before the final norm) -> float32 [K, D] after it."""
    return constrain(final_norm(params, config, hidden).astype(jnp.float32), mesh, "read_rows", "hidden")


def final_states(params, config: ModelConfig, ids, rows, *, backend="chunked", prefill_chunk_len=2048,
                 dtype=jnp.float32, mesh=None, kv_cache=None) -> np.ndarray:
    """ids int [T] -> float32 [K, D]: the final-norm hidden state of each token index in rows int [K].

    A state depends only on the tokens up to its own (attention is causal), so only ids up to the
    last wanted row are run.
    """
    hidden, k = gathered_hidden(params, config, ids, rows, backend=backend, prefill_chunk_len=prefill_chunk_len,
                                dtype=dtype, mesh=mesh, kv_cache=kv_cache)
    return np.asarray(_normed(params, hidden, config=config, mesh=mesh))[:k]


def gathered_hidden(params, config: ModelConfig, ids, rows, *, backend="chunked", prefill_chunk_len=2048,
                    dtype=jnp.float32, mesh=None, kv_cache=None):
    """(hidden [K_pad, D] on the device, before the final norm, K): the last layer's state at each
    token index in rows (padding rows after K); what an LM head reads (jaxeval.engine.compare)."""
    ids, rows = np.asarray(ids), np.asarray(rows)
    if ids.ndim != 1 or not ids.size or rows.ndim != 1 or not rows.size:
        raise ValueError(f"final_states: ids [T] and rows [K] must be non-empty 1-D arrays, got {ids.shape}, "
                         f"{rows.shape}")
    if rows.min() < 0 or rows.max() >= ids.size:
        raise ValueError(f"final_states: row {int(rows.max())} outside the {ids.size} tokens")
    n_inputs = int(rows.max()) + 1
    if n_inputs > config.context_limit:
        raise InputTooLongError(f"final_states: {n_inputs} tokens exceed the model's context ({config.context_source})")
    bucket = length_bucket(n_inputs)
    chunk = chunk_size(bucket, prefill_chunk_len)
    k_pad = count_bucket(rows.size)
    padded_ids = np.zeros((1, bucket), np.int32)
    padded_ids[0, :n_inputs] = ids[:n_inputs]
    gather_at = np.full((k_pad,), -1, np.int32)
    gather_at[:rows.size] = rows

    cache = new_read_cache(config, bucket, dtype, mesh, kv_cache=kv_cache)
    hidden = zeros((k_pad, config.hidden_size), dtype, mesh, ("read_rows", "hidden"))
    gather_at, rope = host_array(gather_at, mesh), host_rope(config, ids.size, mesh)
    for start in range(0, n_inputs, chunk):
        cache, hidden = run_chunk(params, cache, host_array(padded_ids[:, start:start + chunk], mesh),
                                  host_array(np.int32(start), mesh), hidden, gather_at, rope, config=config,
                                  backend=backend, mesh=mesh, kv_cache=kv_cache)
    del cache
    return hidden, int(rows.size)
