"""Causal attention backends behind one signature.

attend(q [B,T,H,hd], k [B,S,KV,hd], v [B,S,KV,hd], q_start, window, scale, softcap) -> [B,T,H,hd]
Query t sits at absolute position q_start + t, key s at position s; a query sees keys with
s <= q and, when window > 0, q - s < window. Scores and softmax are float32; the mask is jaxeval.models.attention_mask.
sink_logits (gpt-oss; keyword, every backend): float [H], one more logit per query head in every softmax,
with no value: transformers' eager gpt-oss attention appends it as a column and drops it after the softmax.
The online softmaxes here start from it (running max = the sink, sum = 1); splash and cudnn rescale their
output by the row's log-sum-exp (jaxeval.models.attention_parts).

- xla: the reference; materialises [T, S] scores. Differentiable (used for training).
- chunked: blockwise online softmax; key blocks that are fully masked (beyond the causal
  diagonal or before the sliding window) are never computed. The CPU and fallback path.

- splash: the Pallas TPU splash-attention kernel (interpret mode on CPU, for tests);
  jaxeval/models/splash_attention.py.
- cudnn: jax.nn.dot_product_attention(implementation="cudnn") on GPU; jaxeval/models/cudnn_attention.py.

Backends are chosen by name through the registry below: `check_attention` says, before anything
is compiled, whether a backend runs a given model on this platform and dtype (and which backends
would); `get_attention(name, config, mesh)` returns the attend function.

jaxeval.models.decode_attention (one query against a stacked KV cache, read in place) serves token-by-token
generation whatever the backend.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from jaxeval.errors import ConfigError
from jaxeval.models.attention_mask import MASK_VALUE, visible
from jaxeval.models.cache_layer import kv_block as cache_block, row_of
from jaxeval.models.online_softmax import head_rows, online_init
from jaxeval.models.platform import traced_platform


def _scores(q, k, scale, softcap):
    """q [B,T,KV,G,hd], k [B,S,KV,hd] -> float32 [B,KV,G,T,S]."""
    # GQA: the G query heads of group kv all score against KV head kv; no K copy per query head
    s = jnp.einsum("btkgd,bskd->bkgts", q, k, preferred_element_type=jnp.float32) * scale
    if softcap:
        s = jnp.tanh(s / softcap) * softcap
    return s


def _group(q, num_kv):
    """q [B,T,H,hd] -> [B,T,KV,G,hd], G = H / KV: query head h = kv * G + g shares KV head kv
    (transformers' repeat_kv order)."""
    b, t, h, d = q.shape
    return q.reshape(b, t, num_kv, h // num_kv, d)


def attention_probs(q, k, q_start, window, scale, softcap=None, sinks=None, sink_logits=None):
    """The softmax of xla attention: q [B,T,H,hd], k [B,S,KV,hd] -> float32 [B,KV,G,T,S] (G = H / KV)."""
    num_kv = k.shape[2]
    s = _scores(_group(q, num_kv), k, scale, softcap)
    q_pos = q_start + jnp.arange(q.shape[1])
    s = jnp.where(visible(q_pos, jnp.arange(k.shape[1]), window, sinks), s, MASK_VALUE)
    if sink_logits is None:
        return jax.nn.softmax(s, axis=-1)
    sink = jnp.broadcast_to(head_rows(sink_logits, num_kv)[None, :, :, None, None], s.shape[:-1] + (1,))
    return jax.nn.softmax(jnp.concatenate([s, sink], axis=-1), axis=-1)[..., :-1]


def xla_attention(q, k, v, q_start, window, scale, softcap=None, sinks=None, sink_logits=None):
    b, t, h, d = q.shape
    p = attention_probs(q, k, q_start, window, scale, softcap, sinks, sink_logits)
    # probs [B,KV,G,T,S] x v [B,S,KV,hd] -> [B,T,KV,G,hd]; the reshape undoes _group (h = kv * G + g)
    out = jnp.einsum("bkgts,bskd->btkgd", p.astype(v.dtype), v, preferred_element_type=jnp.float32)
    return out.reshape(b, t, h, d).astype(q.dtype)


CHUNKED_BLOCK = 256  # chunked_attention's default query and key block (jaxeval.plan.cost counts its scores)


def chunked_attention(q, k, v, q_start, window, scale, softcap=None, block_q=CHUNKED_BLOCK, block_k=CHUNKED_BLOCK,
                      sinks=None, sink_logits=None):
    """Blockwise attention; the query heads of one KV group are folded into the rows of one matmul.

    Folding G = H / KV query heads into [KV, G * block_q, hd] rows makes every step two large
    batched matmuls (batch KV), which is what keeps this fast on CPU. Only the key blocks on the
    edges of a query block's visible span (the causal diagonal, the window's start) are masked; the
    blocks between them are wholly visible and skip the mask. sinks (None or an int scalar): the key
    blocks holding the first `sinks` positions are visited too, before the window's.

    On the 2-core CPU (57M Llama's attention: 8 heads / 2 KV, head_dim 64, a 2,048-query chunk against
    32,768 keys), skipping the interior masks and 256-key blocks took 0.79x the time of masking every
    512-key block (the [rows, keys] float32 passes of the mask cost as much as a tenth of the matmuls).

    Every [rows, keys] float32 pass counts beside two small-depth matmuls (docs/performance_2026-12.md,
    issue 27): a wholly visible block without a soft-cap takes its running max from the unscaled
    scores (max(c * s) == c * max(s) in floating point for c > 0, rounding being monotonic) and folds
    the scale into the exp's pass, so no separate pass writes scaled scores; and K/V blocks are sliced
    from the cache in its own [B, S, KV, hd] layout and transposed block by block (64 KB) rather than
    the whole cache (16 MB per layer at 32k keys) transposed once per chunk. Both keep the exact bits.
    k and v may be CacheLayers (jaxeval.models.cache_layer): a prefill chunk's blocks come straight out of
    the stacked cache, which is never sliced by layer.
    """
    b, t, h, d = q.shape
    if b > 1 and traced_platform() == "gpu":
        # A GPU program batched over rows and KV heads has the compiler lay the whole cache out KV-major for
        # the block matmuls, transposing it before the layer loop and back (an H200's 8B batch-8 32k read
        # held 33 GiB of such temporaries beside a 32 GiB cache): one row at a time it reads blocks in place.
        def one_row(i):
            row_q = jax.lax.dynamic_slice_in_dim(q, i, 1, axis=0)
            return chunked_attention(row_q, row_of(k, i), row_of(v, i), q_start, window, scale, softcap, block_q,
                                     block_k, sinks, sink_logits)[0]
        return jax.lax.map(one_row, jnp.arange(b))
    s_len, num_kv = k.shape[1], k.shape[2]
    g = h // num_kv
    bq, bk = min(block_q, t), min(block_k, s_len)
    if t % bq or s_len % bk:
        raise ValueError(f"chunked attention needs T={t} and S={s_len} to be multiples of {bq} and {bk}")
    q_grouped = q.reshape(b, t, num_kv, g, d).transpose(0, 2, 1, 3, 4)  # [B, KV, T, G, hd]

    def kv_block(x, j):  # [B, S, KV, hd] (or a CacheLayer, read in place) -> key block j as [B, KV, bk, hd]
        return cache_block(x, j * bk, bk).transpose(0, 2, 1, 3)

    def one_query_block(i):
        rows = jax.lax.dynamic_slice_in_dim(q_grouped, i * bq, bq, axis=2).reshape(b, num_kv, bq * g, d)
        q_pos = q_start + i * bq + jnp.arange(bq)
        row_pos = jnp.repeat(q_pos, g)  # position of each folded row
        first = jnp.where(window > 0, jnp.maximum(q_pos[0] - window + 1, 0), 0) // bk
        last = jnp.minimum(q_pos[-1] // bk + 1, s_len // bk)
        # blocks [whole_from, whole_to) are visible to every row: at or before the first row's position,
        # and (with a window) after the last row's window start
        whole_to = jnp.clip((q_pos[0] + 1) // bk, first, last)
        whole_from = jnp.where(window > 0, jnp.clip(-(-(q_pos[-1] - window + 1) // bk), first, whole_to), first)

        def key_block(masked):
            def step(j, carry):
                m, l, acc = carry
                kb, vb = kv_block(k, j), kv_block(v, j)
                s = jnp.einsum("bkrd,bksd->bkrs", rows, kb, preferred_element_type=jnp.float32)
                if masked or softcap:
                    s = s * scale
                    if softcap:
                        s = jnp.tanh(s / softcap) * softcap
                    if masked:
                        s = jnp.where(visible(row_pos, j * bk + jnp.arange(bk), window, sinks), s, MASK_VALUE)
                    m_new = jnp.maximum(m, s.max(axis=-1))
                else:  # the same bits without a pass writing the scaled scores (see the docstring)
                    m_new = jnp.maximum(m, s.max(axis=-1) * scale)
                    s = s * scale
                p = jnp.exp(s - m_new[..., None])
                alpha = jnp.exp(m - m_new)
                pv = jnp.einsum("bkrs,bksd->bkrd", p.astype(vb.dtype), vb, preferred_element_type=jnp.float32)
                return m_new, l * alpha + p.sum(axis=-1), acc * alpha[..., None] + pv
            return step

        shape = (b, num_kv, bq * g)
        carry = online_init(shape, d, None if sink_logits is None else
                             jnp.tile(head_rows(sink_logits, num_kv), (1, bq))[None])  # row r: head r % G
        if sinks is not None:  # the sinks' blocks that lie before the window's first
            carry = jax.lax.fori_loop(0, jnp.minimum(-(-sinks // bk), first), key_block(True), carry)
        carry = jax.lax.fori_loop(first, whole_from, key_block(True), carry)
        carry = jax.lax.fori_loop(whole_from, whole_to, key_block(False), carry)
        _, l, acc = jax.lax.fori_loop(whole_to, last, key_block(True), carry)
        return (acc / l[..., None]).reshape(b, num_kv, bq, g, d)

    out = jax.lax.map(one_query_block, jnp.arange(t // bq))  # [nq, B, KV, bq, G, hd]
    return out.transpose(1, 0, 3, 2, 4, 5).reshape(b, t, h, d).astype(q.dtype)


# ----------------------------------------------------------------------------------------------
# Registry: one entry per backend, with what it can run. Checked before anything is compiled.

@dataclasses.dataclass(frozen=True)
class AttentionBackend:
    name: str
    platforms: tuple[str, ...]  # jax.default_backend() values it runs on
    sliding_window: bool
    softcap: bool
    dtypes: tuple[str, ...] | None  # activation dtypes (None: any)
    head_dim_multiple: int = 1
    max_head_dim: int | None = None
    build: Callable | None = None  # (config, mesh) -> attend(q, k, v, q_start, window, scale, softcap)
    about: str = ""
    test_only_platforms: tuple[str, ...] = ()  # runs there (slowly), but is never suggested there
    reads_cache_layer: bool = False  # takes k, v as a jaxeval.models.cache_layer.CacheLayer (read in place)


def _build_xla(config, mesh):
    return xla_attention


def _build_chunked(config, mesh):
    return chunked_attention


def _build_splash(config, mesh):
    from jaxeval.models.splash_attention import make_splash_attention

    return make_splash_attention(config, mesh)


def _build_cudnn(config, mesh):
    from jaxeval.models.cudnn_attention import make_cudnn_attention

    return make_cudnn_attention(config, mesh)


REGISTRY = {b.name: b for b in (
    AttentionBackend("xla", ("cpu", "gpu", "tpu"), True, True, None, build=_build_xla,
                     about="reference; materialises [T, S] scores"),
    AttentionBackend("chunked", ("cpu", "gpu", "tpu"), True, True, None, build=_build_chunked,
                     about="pure-JAX blockwise online softmax; the CPU and fallback path", reads_cache_layer=True),
    AttentionBackend("splash", ("tpu", "cpu"), True, True, None, build=_build_splash,
                     about="Pallas TPU kernel (CPU: interpret mode, for tests only)", test_only_platforms=("cpu",)),
    AttentionBackend("cudnn", ("gpu",), True, False, ("bfloat16", "float16"), head_dim_multiple=8,
                     max_head_dim=256, build=_build_cudnn, about="cuDNN flash attention through jax.nn"),
)}
BACKENDS = tuple(REGISTRY)


def _unsupported(b: AttentionBackend, config, dtype: str | None, platform: str) -> str | None:
    """Why backend b cannot run this model here, or None."""
    if platform not in b.platforms:
        return f"runs on {'/'.join(b.platforms)}, not on this {platform} platform"
    if config is not None:
        if not b.sliding_window and any(config.layer_windows):
            return f"does not support sliding-window layers (window {max(config.layer_windows)})"
        if not b.softcap and config.attn_logit_softcap:
            return f"does not support attention logit soft-capping (attn_logit_softcap={config.attn_logit_softcap})"
        if config.head_dim % b.head_dim_multiple or (b.max_head_dim and config.head_dim > b.max_head_dim):
            return (f"needs head_dim to be a multiple of {b.head_dim_multiple} and at most {b.max_head_dim} "
                    f"(the model has {config.head_dim})")
    if dtype is not None and b.dtypes is not None and dtype not in b.dtypes:
        return f"needs dtype {' or '.join(b.dtypes)} (got {dtype})"
    return None


def check_attention(name: str, config=None, dtype: str | None = None, platform: str | None = None) -> AttentionBackend:
    """The backend called `name`, or a ConfigError saying why it cannot run `config` in `dtype` here
    and naming the backends that can. platform defaults to jax.default_backend()."""
    if name not in REGISTRY:
        raise ConfigError(f"attention={name!r} is not a backend (choose {', '.join(BACKENDS)})")
    platform = platform or jax.default_backend()
    why = _unsupported(REGISTRY[name], config, dtype, platform)
    if why:
        able = [n for n, b in REGISTRY.items() if n != name and platform not in b.test_only_platforms
                and _unsupported(b, config, dtype, platform) is None]
        raise ConfigError(f"attention={name!r} {why}; use {' or '.join(able) or 'another dtype'} instead")
    return REGISTRY[name]


def get_attention(name: str, config=None, mesh=None):
    """attend(q, k, v, q_start, window, scale, softcap) of backend `name` for `config`.

    splash and cudnn need static masks: they take the model's distinct layer windows from
    `config`, so a traced per-layer window (scanned layers) picks one of them. mesh=None: the
    function takes local arrays (the decoder runs every backend per shard itself, through
    jaxeval.models.context.mesh_attention); with a jaxeval mesh, splash and cudnn take global
    arrays and shard themselves the same way, while xla and chunked are left to XLA's partitioner.
    """
    backend = check_attention(name, config)
    return backend.build(config, mesh)
