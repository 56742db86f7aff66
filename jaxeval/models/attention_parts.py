"""Cache-offset attention out of static-mask kernel calls (shared by the splash and cudnn backends).

Kernels such as splash and cuDNN take masks fixed at trace time, but a prefill chunk's queries
sit at a traced offset: queries at positions start .. start + T - 1 against a cache of S keys.
`offset_attention` splits that into two calls whose masks do not depend on `start`, then merges
them by their log-sum-exps (the flash-attention rescaling):
  - diagonal: the chunk against its own T keys (sliced out of the cache at `start`), causal,
    banded when the layer has a sliding window;
  - history: the chunk against the keys before `start`. Full attention: one call over the whole
    cache, keys at or after `start` masked by a validity vector (a kernel that skips masked blocks,
    like cuDNN given the valid length, computes only what is needed); or, with blocked_history (for
    kernels whose mask must be static to skip blocks, like splash), one call per block of T keys in
    a loop whose trip count is ceil(start / T) (traced), so only the blocks before `start` run and a
    whole multi-chunk prefill costs the causal minimum plus the diagonal blocks, not chunks x cache.
    Sliding window w: only the last H >= w - 1
    positions before `start` are gathered, and key j (position start - H + j) is visible to query i
    when i + H - j < w, a static band; positions below 0 are masked by the validity vector.
A part is part(q, k, v, kind, window, valid) -> (out [B, T, H, hd], lse float32 [B, T, H]) with
kind "diagonal" | "history" | "window_history" and valid bool [S'] or None.

With T == S (no cache, or one chunk covering the whole cache, where start must be 0) the
diagonal call alone is the answer.

Learned attention sinks (gpt-oss: one logit per query head joins the softmax, with no value) need no
kernel support: with the whole row's log-sum-exp L, the sink rescales the kernel's output by
exp(L) / (exp(L) + exp(sink)) = sigmoid(L - sink).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from jaxeval.errors import ConfigError
from jaxeval.models.attention_mask import MASK_VALUE


def is_static(x) -> bool:
    return isinstance(x, (int, np.integer))


def static_windows(config) -> tuple[int, ...] | None:
    """The distinct sliding windows of the model's layers (0 = full attention)."""
    return None if config is None else tuple(sorted(set(config.layer_windows)))


def with_static_window(windows, window, attend_static):
    """attend_static(w) for a Python int w; a traced window selects among the model's `windows`."""
    if is_static(window):
        return attend_static(int(window))
    if not windows:
        raise ValueError("this attention backend needs static masks: pass the model config to get_attention "
                         "(its layer windows), or call it with a Python int window")
    if len(windows) == 1:
        return attend_static(windows[0])
    index = sum(i * (window == w) for i, w in enumerate(windows)).astype(jnp.int32)
    return jax.lax.switch(index, [lambda w=w: attend_static(w) for w in windows])


def merge_partials(out_a, lse_a, out_b, lse_b, reachable=None):
    """Softmax-merge two attention results over disjoint key sets; b's rows may see no key at all.

    out [B, T, H, hd]; lse [B, T, H]. Part a always sees at least the query's own key.
    reachable: optional bool [T], False for rows whose mask leaves them no key in part b (a kernel
    may skip such rows entirely, leaving whatever it leaves in their output).
    Returns (out float32 [B, T, H, hd], lse float32 [B, T, H]) over both key sets.
    """
    lse_a, lse_b = lse_a.astype(jnp.float32), lse_b.astype(jnp.float32)
    seen = lse_b > 0.5 * MASK_VALUE  # False for rows with no visible key (-inf, NaN or mask-level lse)
    if reachable is not None:
        seen = seen & reachable[None, :, None]
    lse = jnp.where(seen, jnp.logaddexp(lse_a, jnp.where(seen, lse_b, 0.0)), lse_a)
    w_a = jnp.exp(lse_a - lse)[..., None]
    w_b = jnp.where(seen, jnp.exp(jnp.where(seen, lse_b, 0.0) - lse), 0.0)[..., None]
    part_b = jnp.where(seen[..., None], out_b.astype(jnp.float32), 0.0)
    return w_a * out_a.astype(jnp.float32) + w_b * part_b, lse


def history_length(window: int, multiple: int) -> int:
    """Keys before the chunk that a sliding window of `window` can reach, rounded up to `multiple`."""
    return -(-(window - 1) // multiple) * multiple


def offset_attention(part, q, k, v, q_start, window: int, history_multiple: int = 1, sink_logits=None,
                     blocked_history=False):
    """q [B, T, H, hd] at positions q_start + t against k, v [B, S, KV, hd] (key s at position s).

    window: a Python int (0 = full). q_start: int or traced int scalar with q_start + T <= S.
    sink_logits: None, or float [H], learned sinks (see the module docstring).
    blocked_history: full-attention history in blocks of T keys (used when S is a multiple of T).
    """
    out, lse = _offset_parts(part, q, k, v, q_start, window, history_multiple, blocked_history)
    if sink_logits is not None:
        lse = lse.astype(jnp.float32) - sink_logits.astype(jnp.float32)
        out = out.astype(jnp.float32) * jax.nn.sigmoid(lse)[..., None]
    return out.astype(q.dtype)


def _offset_parts(part, q, k, v, q_start, window: int, history_multiple: int, blocked_history: bool):
    """offset_attention's (out [B, T, H, hd], lse [B, T, H]) without sinks."""
    t, s = q.shape[1], k.shape[1]
    if window >= s:  # the window reaches every key there is
        window = 0
    if t == s and (not is_static(q_start) or q_start == 0):
        return part(q, k, v, "diagonal", window, None)
    own_k = jax.lax.dynamic_slice_in_dim(k, q_start, t, axis=1)
    own_v = jax.lax.dynamic_slice_in_dim(v, q_start, t, axis=1)
    out_d, lse_d = part(q, own_k, own_v, "diagonal", window, None)
    if window == 1:  # each query sees only itself
        return out_d, lse_d
    if window:
        hist = history_length(window, history_multiple)
        pos = q_start - hist + jnp.arange(hist)
        rows = jnp.clip(pos, 0, s - 1)
        out_h, lse_h = part(q, k[:, rows], v[:, rows], "window_history", window, pos >= 0)
        return merge_partials(out_d, lse_d, out_h, lse_h, jnp.arange(t) < window - 1)
    if blocked_history and s % t == 0:
        return _blocked_history(part, q, k, v, q_start, out_d, lse_d)
    out_h, lse_h = part(q, k, v, "history", 0, jnp.arange(s) < q_start)
    return merge_partials(out_d, lse_d, out_h, lse_h)


def _blocked_history(part, q, k, v, q_start, out, lse):
    """Merge into (out, lse) the chunk's attention to the keys before q_start, T keys per call.

    Block j holds keys j*T .. j*T + T - 1; only the ceil(q_start / T) blocks before the chunk run,
    each seeing at least its first key, and the running result stays float32 between merges.
    """
    t = q.shape[1]

    def block(j, acc):
        kb, vb = (jax.lax.dynamic_slice_in_dim(x, j * t, t, axis=1) for x in (k, v))
        out_b, lse_b = part(q, kb, vb, "history", 0, j * t + jnp.arange(t) < q_start)
        return merge_partials(*acc, out_b, lse_b)

    acc = (out.astype(jnp.float32), lse.astype(jnp.float32))
    return jax.lax.fori_loop(0, (q_start + t - 1) // t, block, acc)


def on_mesh(local, mesh, batch_axes=("data",), head_axis="tensor"):
    """local attend (per-shard arrays) -> attend on global arrays under shard_map, or local itself.

    Batch over `batch_axes`, query heads over `head_axis`; K/V heads are split too when the
    axis divides them, else replicated and each shard keeps the one its query heads share.
    Other mesh axes see whole arrays (context parallelism is the decoder's, around any backend).
    """
    if mesh is None:
        return local
    sizes = dict(mesh.shape)
    batch = tuple(a for a in batch_axes if sizes.get(a, 1) > 1)
    tp = sizes.get(head_axis, 1)

    def sharded(q, k, v, q_start, window, scale, softcap=None, sink_logits=None):
        b, h, kv = q.shape[0], q.shape[2], k.shape[2]
        kv_split = kv % tp == 0
        if b % int(np.prod([sizes[a] for a in batch])) or h % tp or not (kv_split or tp % kv == 0):
            raise ConfigError(f"attention on mesh {sizes}: batch {b} must divide over {batch or 'no axis'}, "
                              f"and {h} query / {kv} KV heads over {head_axis}={tp}")
        heads = head_axis if tp > 1 else None
        batch_spec = batch if len(batch) > 1 else (batch[0] if batch else None)
        q_spec = P(batch_spec, None, heads, None)
        kv_spec = P(batch_spec, None, heads if kv_split else None, None)

        def body(q, k, v, q_start, traced_window, sinks):
            if tp > 1 and not kv_split:  # replicated K/V heads: keep the one this shard's query heads use
                j = jax.lax.axis_index(head_axis) // (tp // kv)
                k, v = (jax.lax.dynamic_slice_in_dim(x, j, 1, axis=2) for x in (k, v))
            # a static window stays static (the kernels' masks need it); a traced one is selected inside
            return local(q, k, v, q_start, int(window) if is_static(window) else traced_window, scale, softcap,
                         **({} if sink_logits is None else {"sink_logits": sinks}))

        run = jax.shard_map(body, mesh=mesh, in_specs=(q_spec, kv_spec, kv_spec, P(), P(), P(heads)),
                            out_specs=q_spec, check_vma=False)
        sinks = jnp.zeros((h,), jnp.float32) if sink_logits is None else sink_logits
        return run(q, k, v, jnp.asarray(q_start, jnp.int32), jnp.asarray(window, jnp.int32), sinks)

    return sharded
