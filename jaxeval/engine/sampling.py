"""Choosing the next token from float32 logits: greedy, or temperature then nucleus (top-p) sampling.

Reproducible: every draw uses its own key, folded from the seed, the prompt's index in the
request and the position whose output is being sampled. A prompt therefore gets the same tokens
for the same seed whatever batch it lands in, whatever its row, and however many rows are padding.
temperature and top_p are traced scalars, so changing them never recompiles.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def prompt_keys(seed, prompt_ids):
    """seed uint32 scalar, prompt_ids int [B] -> a typed PRNG key per row [B]."""
    base = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(prompt_ids)


def top_p_filter(logits, top_p):
    """logits float32 [B, V] -> the same, with tokens outside each row's nucleus set to -inf.

    The nucleus is the smallest set of most likely tokens whose probability reaches top_p: a token
    is kept when the tokens ranked strictly above it hold less than top_p (transformers' TopP rule).
    The most likely token is always kept; tokens tied with the last one kept are kept too.
    """
    ranked = jnp.flip(jnp.sort(logits, axis=-1), axis=-1)  # [B, V], descending
    probs = jax.nn.softmax(ranked, axis=-1)
    mass_above = jnp.cumsum(probs, axis=-1) - probs
    n_keep = jnp.maximum(jnp.sum(mass_above < top_p, axis=-1), 1)  # [B]
    threshold = jnp.take_along_axis(ranked, (n_keep - 1)[:, None], axis=-1)  # [B, 1]
    return jnp.where(logits >= threshold, logits, -jnp.inf)


def choose_tokens(logits, keys, positions, temperature, top_p):
    """logits float32 [B, V]; keys [B] (prompt_keys); positions int [B]: the position whose output
    each row samples. temperature 0 means greedy (argmax, first index on ties, like torch).
    Returns int32 [B]."""

    def greedy(_):
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def sample(_):
        # shift first: the best logit becomes 0, so a tiny temperature sends the rest to -inf, not to nan
        scaled = (logits - logits.max(axis=-1, keepdims=True)) / temperature
        scaled = jax.lax.cond(top_p < 1.0, lambda s: top_p_filter(s, top_p), lambda s: s, scaled)
        step_keys = jax.vmap(jax.random.fold_in)(keys, positions)
        return jax.vmap(jax.random.categorical)(step_keys, scaled).astype(jnp.int32)

    return jax.lax.cond(temperature > 0, sample, greedy, None)
