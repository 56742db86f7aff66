"""SnapKV prompt compression for generation: which prompt positions each layer and KV head keeps.

After the prefill, the prompt's last `window` tokens run through the layers once more against
the row's cache (their keys and values are not written back: the cache already holds them),
and at each layer their attention probabilities vote for the prompt positions before the
window (jaxeval.models.kv_policy.snapkv_keep). The result is a keep mask [B, L, S, KV] that
decode_attention applies from the second generated token on (the first comes from the full
prompt, as SnapKV's compression follows its prefill). SnapKVMaskCache is that masked form: the
full cache plus the mask, the reference the bounded cache (bounded_kv.SnapKVCache) is tested against.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.kv_cache import KVCache, write_prompts
from jaxeval.models.attention import attention_probs, xla_attention
from jaxeval.models.config import ModelConfig
from jaxeval.models.decoder import attention_inputs, embed_tokens, layer_output, sink_logits
from jaxeval.models.kv_policy import snapkv_keep
from jaxeval.models.rope import RopeTables, rope_tables


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(3,))
def observe_row(params, cache_k, cache_v, keep, window_ids, start, row, rope, *, config: ModelConfig, runtime):
    """keep bool [B, L, S, KV] with row `row`'s slots chosen by its observation window.

    cache_k, cache_v [L, B, KV, S, hd] (kv_cache's layout) holding the prompt (prefilled); window_ids int [1, W]: the
    prompt's last W tokens, at positions start .. start + W - 1; rope: RopeTables of the prompt.
    """
    policy = runtime.kv_cache
    w = window_ids.shape[1]
    positions = start + jnp.arange(w)
    row_k, row_v = (jax.lax.dynamic_index_in_dim(cache, row, axis=1, keepdims=False) for cache in (cache_k, cache_v))
    windows = jnp.asarray(np.array(config.layer_windows, dtype=np.int32))

    def layer(x, xs):
        lp, inv_freq, scale, window, layer_k, layer_v = xs
        layer_k, layer_v = (jnp.swapaxes(c, 0, 1) for c in (layer_k, layer_v))  # [S, KV, hd], as attention reads
        q, k, v = attention_inputs(lp, config, x, positions, (inv_freq, scale))
        keys, values = (jax.lax.dynamic_update_slice_in_dim(c[None], n.astype(c.dtype), start, axis=1)
                        for c, n in ((layer_k, k), (layer_v, v)))
        sinks = sink_logits(lp, config)
        attn = xla_attention(q, keys, values, start, window, config.attention_scale, config.attn_logit_softcap,
                             sink_logits=sinks)
        probs = attention_probs(q, keys, start, window, config.attention_scale, config.attn_logit_softcap,
                                sink_logits=sinks)
        votes = probs[0].sum(axis=(1, 2))  # [KV, S]: over the KV head's query heads and the window's queries
        return layer_output(lp, config, x, attn), snapkv_keep(votes, start, policy, window)

    x = embed_tokens(params, config, window_ids)
    _, row_keep = jax.lax.scan(layer, x, (params["layers"], rope.inv_freq, rope.scale, windows, row_k, row_v))
    return jax.lax.dynamic_update_index_in_dim(keep, row_keep, row, axis=0)


def snapkv_masks(params, config: ModelConfig, runtime, cache: KVCache, prompts) -> jax.Array:
    """keep bool [B, L, S, KV] for a prefilled batch cache (k, v [L, B, KV, S, hd]) of `prompts`
    (int32 arrays; rows past them are padding). A prompt of at most `window` tokens keeps everything."""
    policy = runtime.kv_cache
    layers, b, kv, s, _ = cache.k.shape
    keep = jnp.ones((b, layers, s, kv), bool)
    for r, prompt in enumerate(prompts):
        if prompt.size <= policy.window:
            continue
        rope = RopeTables(*(jnp.asarray(t) for t in rope_tables(config, prompt.size)))
        keep = observe_row(params, cache.k, cache.v, keep, jnp.asarray(prompt[None, -policy.window:]),
                           jnp.int32(prompt.size - policy.window), jnp.int32(r), rope, config=config, runtime=runtime)
    return keep


@dataclasses.dataclass
class SnapKVMaskCache(KVCache):
    """SnapKV as a mask over the full cache: k, v [L, B, KV, S, hd] and keep bool [B, L, S, KV]."""

    keep: object = None

    def visible(self):
        return self.keep

    def prefill(self, params, config, runtime, batch):
        """The prompts written, their kept slots voted, and the first token decoded from the whole prompt."""
        full = write_prompts(params, config, runtime, KVCache(self.k, self.v), batch.prompts, batch.chunk, batch.rows)
        keep = snapkv_masks(params, config, runtime, full, batch.prompts)
        tokens, positions, full = full.step(params, config, runtime, batch, jnp.asarray(batch.last_tokens),
                                            jnp.asarray(batch.lengths - 1), 0)
        return tokens, positions, SnapKVMaskCache(full.k, full.v, keep)


jax.tree_util.register_dataclass(SnapKVMaskCache, data_fields=["k", "v", "keep"], meta_fields=[])
