"""Bounded decode caches for the streaming and snapkv policies: the memory the policy promises.

The masked form of these policies (a mask over a cache of every position) gives the numbers; this
one holds only what the policy keeps, with the position each slot holds beside it:

- streaming: `sinks` slots for positions 0 .. sinks - 1, then a ring of R slots, position p >= sinks
  at slot sinks + (p - sinks) % R. R is the policy window, or a sliding-window layer's own window
  where that is longer (those layers keep their window); keys keep the RoPE of their original
  positions (the policy's positions=original), so a slot is never re-rotated.
- snapkv: K slots for the prompt positions the policy keeps, compacted per layer and KV head in
  position order (K = budget, or a sliding layer's window where longer: a sliding layer keeps its
  last K positions), then one slot per new token, at K + (position - prompt length).

Either way the decode cache of a batch is [B, L, N, KV, hd] with N bounded by the policy (and by
the exact cache's length), plus slot positions int32 [B, L, N, KV] (EMPTY_SLOT where a slot holds
nothing). decode_attention masks by the slots' positions exactly as the masked form masks by
position, so both give the same tokens (log-probs within float32 summation order). Each prompt is
prefilled alone into a full one-row cache, which is then compacted into its row: SnapKV chooses
after the prefill, as in the paper; StreamingLLM's prefill could ring-buffer too but does not (the
peak is one prompt's cache, not the batch's).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.decode_row import decode_rows, write_step
from jaxeval.engine.kv_cache import KVCache, decode_step, write_prompts
from jaxeval.engine.sampling import choose_tokens
from jaxeval.engine.snapkv import snapkv_masks
from jaxeval.models.config import ModelConfig

EMPTY_SLOT = 2 ** 30  # the position of a slot holding nothing: later than any query, so never seen


@dataclasses.dataclass(frozen=True)
class BoundedLayout:
    kind: str  # streaming | snapkv
    slots: int  # N: slots per layer and KV head
    prompt_slots: int  # streaming: N (sinks + ring); snapkv: K, the compacted prompt's slots
    sinks: int = 0  # streaming only

    @property
    def ring(self) -> int:
        return max(self.slots - self.sinks, 1)


def bounded_layout(config: ModelConfig, policy, cache_len: int, longest_prompt: int,
                   max_new_tokens: int) -> BoundedLayout:
    """The bounded cache of a batch whose exact cache would hold cache_len slots."""
    sliding = max([w for w in config.layer_windows if w > 0], default=0)
    if policy.kind == "streaming":
        slots = min(policy.sinks + max(policy.window, sliding), cache_len)
        return BoundedLayout("streaming", slots, slots, policy.sinks)
    prompt_slots = min(max(policy.budget, sliding), longest_prompt)
    return BoundedLayout("snapkv", prompt_slots + max_new_tokens - 1, prompt_slots)


def cache_bytes(cache) -> int:
    """Bytes a cache's arrays hold (a bounded cache's slot positions included)."""
    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(cache))


def write_slot(layout: BoundedLayout, position, offset):
    """The slot a token at `position` goes to; offset: snapkv's prompt length - K for this row."""
    if layout.kind == "streaming":
        return jnp.where(position < layout.sinks, position, layout.sinks + (position - layout.sinks) % layout.ring)
    return position - offset


def _source_positions(layout: BoundedLayout, config: ModelConfig, keep, length, s_len: int):
    """(positions int [L, P, KV] of a full row cache to copy into slots 0 .. P - 1, valid bool [L, P, KV]),
    P = layout.prompt_slots, for a row holding positions 0 .. length - 1."""
    last = length - 1
    layers, kv = config.num_layers, config.num_kv_heads
    if layout.kind == "streaming":
        j = jnp.arange(layout.prompt_slots)
        ring_pos = last - jnp.mod(last - j, layout.ring)  # slot sinks + r holds the latest p = sinks + r (mod R)
        src = jnp.where(j < layout.sinks, j, ring_pos)
        valid = jnp.where(j < layout.sinks, j <= last, ring_pos >= layout.sinks)
        return (jnp.broadcast_to(src[None, :, None], (layers, layout.prompt_slots, kv)),
                jnp.broadcast_to(valid[None, :, None], (layers, layout.prompt_slots, kv)))
    pos = jnp.arange(s_len)[None, :, None]
    sliding = jnp.asarray(np.array(config.layer_windows, dtype=np.int32))[:, None, None] > 0
    recent = (pos >= length - layout.prompt_slots) & (pos <= last)
    chosen = recent if keep is None else (keep[0] & (pos <= last))
    select = jnp.broadcast_to(jnp.where(sliding, recent, chosen), (layers, s_len, kv))
    order = jnp.argsort(~select, axis=1, stable=True)[:, :layout.prompt_slots]  # kept positions first, in order
    return order, jnp.take_along_axis(select, order, axis=1)


@functools.partial(jax.jit, static_argnames=("config",), donate_argnums=(0,))
def compact_row(cache, row_k, row_v, keep, length, row, *, config: ModelConfig):
    """The bounded cache with row `row` filled from a full one-row cache.

    row_k, row_v [L, 1, KV, S, hd] (kv_cache's layout) holding positions 0 .. length - 1; keep: snapkv's bool [1, L, S, KV]
    (None: the prompt fits, everything is kept) or None for streaming."""
    layout = cache.layout
    src, valid = _source_positions(layout, config, keep, length, row_k.shape[3])
    gathered = [jnp.take_along_axis(jnp.swapaxes(full[:, 0], 1, 2), src[..., None], axis=1)
                for full in (row_k, row_v)]  # [L, P, KV, hd]
    positions = jnp.where(valid, src, EMPTY_SLOT).astype(jnp.int32)
    k, v = (jax.lax.dynamic_update_slice(c, g[None].astype(c.dtype), (row, 0, 0, 0, 0))
            for c, g in ((cache.k, gathered[0]), (cache.v, gathered[1])))
    return dataclasses.replace(cache, k=k, v=v,
                               slot_pos=jax.lax.dynamic_update_slice(cache.slot_pos, positions[None], (row, 0, 0, 0)))


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def decode_step_bounded(params, cache, tokens, positions, keys, temperature, top_p, rope, suppress=None, *,
                        config: ModelConfig, runtime):
    """kv_cache.decode_step on a bounded cache (k, v, slot positions), donated and updated in place.

    Returns (next tokens int32 [B], positions + 1, cache)."""
    slots = jax.vmap(functools.partial(write_slot, cache.layout))(positions, cache.offsets)
    now = jnp.broadcast_to(positions[:, None, None], cache.slot_pos.shape[:2] + cache.slot_pos.shape[3:])  # [B, L, KV]
    slot_pos = write_step(cache.slot_pos, now, slots)  # before the rows read it: read after, XLA copies it to write it

    logits, k_new, v_new = decode_rows(params, cache.k, cache.v, tokens, positions, rope, config=config,
                                       policy=runtime.kv_cache, slots=slots, slot_positions=slot_pos)
    k, v = write_step(cache.k, k_new, slots), write_step(cache.v, v_new, slots)
    if suppress is not None:
        logits = logits + suppress
    return (choose_tokens(logits, keys, positions, temperature, top_p), positions + 1,
            dataclasses.replace(cache, k=k, v=v, slot_pos=slot_pos))


@dataclasses.dataclass
class BoundedCache:
    """k, v [B, L, N, KV, hd], slot positions int32 [B, L, N, KV] (EMPTY_SLOT: none), offsets int32 [B]
    (snapkv's prompt length - K per row: write_slot) and the layout (static)."""

    k: object
    v: object
    slot_pos: object
    offsets: object
    layout: BoundedLayout

    @classmethod
    def init(cls, config, runtime, batch):
        layout = bounded_layout(config, runtime.kv_cache, batch.cache_len, batch.longest, batch.max_new_tokens)
        shape = (batch.rows, config.num_layers, layout.slots, config.num_kv_heads)
        k, v = (jnp.zeros(shape + (config.head_dim,), runtime.jnp_dtype) for _ in range(2))
        return cls(k, v, jnp.full(shape, EMPTY_SLOT, jnp.int32), jnp.asarray(batch.lengths - layout.prompt_slots),
                   layout)

    def votes(self, params, config, runtime, row: KVCache, prompt):
        """The one-row keep mask the compaction follows (None: the recent positions)."""
        return None

    def prefill(self, params, config, runtime, batch):
        """Each prompt prefilled alone into a full one-row cache, its first token decoded from the whole
        prompt (as in the masked form), then the row compacted into this cache."""
        cache, first = self, []
        prompts = list(batch.prompts) + [np.zeros(1, np.int32)] * (batch.rows - len(batch.prompts))
        keys, temperature, top_p, _, bias = batch.sampling(0)
        for r, prompt in enumerate(prompts):
            full = write_prompts(params, config, runtime, KVCache.zeros(config, runtime, 1, batch.cache_len),
                                 [prompt], batch.chunk, 1)
            keep = self.votes(params, config, runtime, full, prompt)
            size = np.array([prompt.size], np.int32)
            chosen, _, full = decode_step(params, full, jnp.asarray(prompt[-1:]), jnp.asarray(size - 1),
                                          keys[r:r + 1], temperature, top_p, batch.rope(size), bias, config=config,
                                          runtime=runtime)
            cache = compact_row(cache, full.k, full.v, keep, jnp.int32(prompt.size), jnp.int32(r), config=config)
            first.append(chosen)
        return jnp.concatenate(first), jnp.asarray(batch.lengths), cache

    def step(self, params, config, runtime, batch, tokens, positions, fed: int):
        return decode_step_bounded(params, self, tokens, positions, *batch.sampling(fed), config=config,
                                   runtime=runtime)


@dataclasses.dataclass
class StreamingCache(BoundedCache):
    """StreamingLLM's bounded cache: the sinks and a ring of the last positions."""


@dataclasses.dataclass
class SnapKVCache(BoundedCache):
    """SnapKV's bounded cache: the prompt positions the observation window votes for, then the new tokens."""

    def votes(self, params, config, runtime, row: KVCache, prompt):
        return snapkv_masks(params, config, runtime, row, [prompt])


for _kind in (BoundedCache, StreamingCache, SnapKVCache):
    jax.tree_util.register_dataclass(_kind, data_fields=["k", "v", "slot_pos", "offsets"], meta_fields=["layout"])
