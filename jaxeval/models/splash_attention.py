"""`splash` attention backend: the Pallas TPU splash-attention kernel (jax.experimental.pallas.ops.tpu).

On TPU the kernel is compiled by Mosaic; on CPU it runs in Pallas interpret mode (every grid
step evaluated as ordinary JAX ops: exact, slow, for tests). Masks (causal, sliding window) are
splash mask objects, so fully masked blocks are skipped; soft-capping is the kernel's
attn_logits_soft_cap. GQA uses the kernel's own grouping (query head h reads KV head h // G).

The attend function works on local arrays (one device, or one shard inside shard_map); with a
mesh, `make_splash_attention` wraps it in shard_map (heads over `tensor`, batch over `data`;
jaxeval.models.attention_parts.on_mesh). The decoder instead calls the local function per
shard inside its own shard_map (jaxeval.models.context), which adds context parallelism.

A prefill chunk at a traced cache offset is a causal call on its own keys plus one full call per
chunk-sized block of keys before the offset, merged by log-sum-exp (jaxeval.models.attention_parts):
the masks stay static, and only the blocks before the offset run, so a whole multi-chunk prefill
costs the causal minimum plus the diagonal blocks' upper halves (it used to be one call over the
whole cache per chunk, keys past the offset masked: about twice the minimum). A chunk covering the
whole cache (T == S) is one causal call.

Shapes: query and key lengths must be multiples of 128 (the kernel's key block granularity);
jaxeval's length buckets and prefill chunks are.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.errors import ConfigError
from jaxeval.models.attention_parts import offset_attention, on_mesh, static_windows, with_static_window
from jaxeval.models.platform import traced_platform

LANES = 128  # splash key blocks are multiples of this
MAX_BLOCK = 512


def interpret_mode() -> bool:
    """Pallas interpret mode unless the kernel is traced for a TPU (jaxeval.models.platform: a compile for
    a TPU target on a CPU-only machine traces for the TPU, so the kernel lowers as Mosaic)."""
    return traced_platform() != "tpu"


def _splash():
    from jax.experimental.pallas.ops.tpu import splash_attention

    return splash_attention


def _block(n: int) -> int:
    """The largest of 512, 256, 128 dividing n."""
    for b in (MAX_BLOCK, 256, LANES):
        if n % b == 0:
            return b
    raise ConfigError(f"splash attention needs sequence lengths that are multiples of {LANES} (got {n}); "
                      "use a prefill chunk of at least 128 tokens, or attention='chunked'")


@functools.lru_cache(maxsize=256)
def _kernel(kind: str, heads: int, t: int, s: int, window: int, softcap: float | None, interpret: bool):
    """A splash kernel for one static mask (see attention_parts for the kinds), all heads alike."""
    sa = _splash()
    if kind == "diagonal":
        mask = sa.LocalMask((t, s), window_size=(window - 1, 0), offset=0) if window else sa.CausalMask((t, s))
    elif kind == "history":
        mask = sa.FullMask((t, s))
    else:  # window_history: key j sits at position start - s + j; query i at start + i
        mask = sa.LocalMask((t, s), window_size=(window - 1, 0), offset=s)
    bq, bkv = _block(t), _block(s)
    sizes = sa.BlockSizes(block_q=bq, block_kv=bkv, block_kv_compute=bkv)
    with jax.ensure_compile_time_eval():  # concrete mask-info arrays, so the cached kernel outlives this trace
        return sa.make_splash_mha(sa.MultiHeadMask([mask] * heads), block_sizes=sizes, head_shards=1,
                                  q_seq_shards=1, save_residuals=True, attn_logits_soft_cap=softcap,
                                  interpret=interpret)


def kernel_blocks(kind: str, t: int, s: int, window: int = 0) -> dict:
    """Blocks one head of a splash call of this mask kind executes, from the kernel's own forward mask
    info (block_mask entries not 0; a mask with no info has every block full)."""
    info = _kernel(kind, 1, t, s, window, None, True).fwd_mask_info
    bq, bkv = _block(t), _block(s)
    blocks = (t // bq) * (s // bkv) if info.block_mask is None else int((np.asarray(info.block_mask)[0] != 0).sum())
    return {"blocks": blocks, "block_q": bq, "block_kv": bkv}


def _part(q, k, v, kind, window, valid, *, scale, softcap, interpret):
    """One splash call: q [B, T, H, hd], k, v [B, S, KV, hd] -> (out [B, T, H, hd], lse [B, T, H])."""
    b, t, h, d = q.shape
    kernel = _kernel(kind, h, t, k.shape[1], window, softcap, interpret)
    qh = (q.astype(jnp.float32) * scale).astype(q.dtype).transpose(0, 2, 1, 3)  # [B, H, T, hd]
    kh, vh = k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)  # [B, KV, S, hd]
    segments = None
    if valid is not None:  # a key is visible only where its segment id matches the queries' (1)
        segments = _splash().SegmentIds(q=jnp.ones((t,), jnp.int32), kv=valid.astype(jnp.int32))
    out, (lse,) = jax.vmap(lambda q1, k1, v1: kernel(q1, k1, v1, segment_ids=segments))(qh, kh, vh)
    return out.transpose(0, 2, 1, 3), lse.transpose(0, 2, 1)


def splash_attention(q, k, v, q_start, window, scale, softcap=None, *, windows=None, interpret=None, sink_logits=None):
    """Causal attention on local arrays: q [B, T, H, hd] at positions q_start + t; k, v [B, S, KV, hd].

    window: Python int, or a traced scalar taking one of `windows` (the model's distinct layer
    windows). interpret: None = compile on TPU, interpret elsewhere. sink_logits: None, or float [H]
    (gpt-oss), folded in through the kernel's log-sum-exp (jaxeval.models.attention_parts).
    """
    if interpret is None:
        interpret = interpret_mode()
    t, s = q.shape[1], k.shape[1]
    _block(t), _block(s)  # shape errors before any tracing of the kernel
    part = functools.partial(_part, scale=scale, softcap=float(softcap) if softcap else None, interpret=interpret)
    return with_static_window(windows, window,
                              lambda w: offset_attention(part, q, k, v, q_start, w, history_multiple=LANES,
                                                          sink_logits=sink_logits, blocked_history=True))


def make_splash_attention(config=None, mesh=None, interpret=None):
    """attend(q, k, v, q_start, window, scale, softcap) for `config`'s layer windows.

    mesh: None for local arrays (the decoder shards around any backend itself); a Mesh (axes
    data / tensor used, jaxeval.models.mesh.make_mesh) to take global arrays, run per shard.
    """
    return on_mesh(functools.partial(splash_attention, windows=static_windows(config), interpret=interpret), mesh)
