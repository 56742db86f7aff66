"""Multi-head latent attention (DeepSeek-V3), in the absorbed form whose cache is the compressed latent.

transformers 5.x's DeepseekV3Attention projects each token to a latent c_kv [r] (kv_a_proj_with_mqa,
then kv_a_layernorm) and one shared rotary key k_rope [dr], caches those, and expands them per head
with kv_b_proj into k_nope [H, dn] and v [H, dv]; queries are q_nope [H, dn] and q_rope [H, dr]
(q_proj, or q_a_proj -> q_a_layernorm -> q_b_proj). Scores are q_nope.k_nope + q_rope.k_rope.

We never expand the cache. With kv_b_proj split as W_uk [r, H, dn] and W_uv [r, H, dv],
q_nope.k_nope = (W_uk q_nope).c_kv, so attention is multi-query attention with one KV head of width
dr + r: the key (and value) of a token is [k_rope, c_kv] (rotary dims first, so the one decoder's
partial rope rotates them), the query of head h is [q_rope, W_uk_h q_nope]. The value part of the
output, its last r dims, is the attention-weighted latent; W_uv then o_proj make the layer's output.
So the KV cache holds dr + r numbers per token and layer (DeepSeek-V3: 576, against 128 heads x
(192 + 128) for full K/V), and the values need no cache of their own: they are the keys.

Parameters (ours, [in, out]; L layers, D hidden, H heads, rq q_lora_rank, r kv_lora_rank):
  mla_q [L, D, H, dn + dr] (q_lora_rank null) or mla_q_a [L, D, rq], mla_q_a_norm [L, rq], mla_q_b [L, rq, H, dn + dr]
  mla_kv_a [L, D, r + dr] (latent first, then the rotary key, as HF); mla_kv_a_norm [L, r]
  mla_kv_b [L, r, H, dn + dv]; mla_o [L, H, dv, D]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax.numpy as jnp

# DeepseekV3RMSNorm(q_lora_rank) and (kv_lora_rank) are built with the class default eps, not rms_norm_eps
LATENT_NORM_EPS = 1e-6


@dataclasses.dataclass(frozen=True)
class MLADims:
    q_lora_rank: int  # rq; 0: a plain q_proj
    kv_lora_rank: int  # r
    qk_nope_head_dim: int  # dn
    qk_rope_head_dim: int  # dr
    v_head_dim: int  # dv

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def cache_dim(self) -> int:
        """Width of the one cached KV head: the rotary key and the latent."""
        return self.qk_rope_head_dim + self.kv_lora_rank


def mla_queries_keys(lp, d: MLADims, h, latent_norm: Callable):
    """h [B, T, D] (the normed layer input) -> q [B, T, H, dr + r], k [B, T, 1, dr + r], both unrotated:
    the rotary part first, then the latent part (the query's absorbed through W_uk).
    latent_norm(x, w): the RMSNorm of q_a_layernorm and kv_a_layernorm (eps LATENT_NORM_EPS)."""
    if d.q_lora_rank:
        q = latent_norm(h @ lp["mla_q_a"], lp["mla_q_a_norm"])
        q = jnp.einsum("btr,rhk->bthk", q, lp["mla_q_b"])
    else:
        q = jnp.einsum("btd,dhk->bthk", h, lp["mla_q"])
    q_nope, q_rope = q[..., :d.qk_nope_head_dim], q[..., d.qk_nope_head_dim:]
    kv = h @ lp["mla_kv_a"]  # [B, T, r + dr]
    latent = latent_norm(kv[..., :d.kv_lora_rank], lp["mla_kv_a_norm"])
    k_rope = kv[..., d.kv_lora_rank:]
    w_uk = lp["mla_kv_b"][..., :d.qk_nope_head_dim]  # [r, H, dn]
    q_latent = jnp.einsum("bthn,rhn->bthr", q_nope, w_uk, preferred_element_type=jnp.float32).astype(q.dtype)
    q = jnp.concatenate([q_rope, q_latent], axis=-1)
    k = jnp.concatenate([k_rope, latent], axis=-1)[:, :, None, :]
    return q, k


def mla_output(lp, d: MLADims, attn):
    """attn [B, T, H, dr + r] (attention over the [k_rope, c_kv] cache) -> o_proj's output [B, T, D]."""
    latent = attn[..., d.qk_rope_head_dim:]  # the attention-weighted c_kv, per head
    w_uv = lp["mla_kv_b"][..., d.qk_nope_head_dim:]  # [r, H, dv]
    v = jnp.einsum("bthr,rhv->bthv", latent, w_uv, preferred_element_type=jnp.float32).astype(attn.dtype)
    return jnp.einsum("bthv,hvd->btd", v, lp["mla_o"])
