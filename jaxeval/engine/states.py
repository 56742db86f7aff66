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

from jaxeval.engine.buckets import count_bucket, length_bucket
from jaxeval.engine.read import host_rope, prefill_rows
from jaxeval.engine.runtime import Runtime
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models.decoder import final_norm
from jaxeval.models.sharding import constrain


@functools.partial(jax.jit, static_argnames=("config", "runtime"))
def _normed(params, hidden, *, config, runtime):
    """hidden [K, D] (before the final norm) -> float32 [K, D] after it."""
    return constrain(final_norm(params, config, hidden).astype(jnp.float32), runtime.mesh, "read_rows", "hidden")


def final_states(params, config: ModelConfig, runtime: Runtime, ids, rows) -> np.ndarray:
    """ids int [T] -> float32 [K, D]: the final-norm hidden state of each token index in rows int [K].

    A state depends only on the tokens up to its own (attention is causal), so only ids up to the
    last wanted row are run.
    """
    hidden, k = gathered_hidden(params, config, runtime, ids, rows)
    return np.asarray(_normed(params, hidden, config=config, runtime=runtime))[:k]


def gathered_hidden(params, config: ModelConfig, runtime: Runtime, ids, rows):
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
    padded_ids = np.zeros((1, length_bucket(n_inputs)), np.int32)
    padded_ids[0, :n_inputs] = ids[:n_inputs]
    gather_at = np.full((1, count_bucket(rows.size)), -1, np.int32)
    gather_at[0, :rows.size] = rows
    _, hidden = prefill_rows(params, config, runtime, padded_ids, gather_at, host_rope(config, ids.size, runtime.mesh),
                             end=n_inputs)
    return hidden[0], int(rows.size)
