"""Gated DeltaNet token mixer of Qwen3.5 / Qwen3-Next, as transformers computes it.

Pure functions over arrays, to be called from the scanned decoder. Per token t and value head h
(state S [dk, dv], float32; q, k L2-normalised, q scaled by dk**-0.5):

    S <- exp(g_t) S;   S <- S + k_t (beta_t (v_t - S^T k_t))^T;   o_t = S^T q_t

with beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias). Two forms of that rule:
`recurrent_gated_delta_rule` (lax.scan over tokens: the reference and the decode step) and
`chunk_gated_delta_rule` (prefill: within a chunk of C tokens the C sequential updates are one
unit-lower-triangular solve, the WY/UT form; a lax.scan over chunks carries S). Both take and
return S, so a long read carries it across prefill chunks and decode continues from it.

Parameter layout of one layer (ours: [in, ...out]; Hk key heads, Hv = r * Hk value heads, value
head h reads key head h // r, as torch's repeat_interleave; K conv taps; D hidden):
  wq, wk [D, Hk, dk]; wv, wz [D, Hv, dv]; wb, wa [D, Hv]
  conv_q, conv_k [K, Hk, dk]; conv_v [K, Hv, dv]   (depthwise causal conv, no bias)
  a_log, dt_bias [Hv]; norm [dv] (gated RMSNorm, plain weight, not 1 + w); wo [Hv, dv, D]
Every head-indexed weight is split by head, so tensor parallelism shards Hk and Hv alike.
State (GDNState): conv_q, conv_k [B, K-1, Hk, dk], conv_v [B, K-1, Hv, dv] (the last K-1 conv
inputs, model dtype); recurrent [B, Hv, dk, dv] float32.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

_HI = jax.lax.Precision.HIGHEST  # float32 matmuls stay float32 on TPU (default would be bf16 passes)


@dataclasses.dataclass(frozen=True)
class GDNDims:
    hidden_size: int
    num_k_heads: int  # Hk
    num_v_heads: int  # Hv, a multiple of Hk
    head_k_dim: int  # dk
    head_v_dim: int  # dv
    conv_kernel: int  # K

    @classmethod
    def from_hf_config(cls, cfg) -> "GDNDims":
        """From a transformers Qwen3_5TextConfig / Qwen3NextConfig (object or config.json dict)."""
        get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k)
        return cls(get("hidden_size"), get("linear_num_key_heads"), get("linear_num_value_heads"),
                   get("linear_key_head_dim"), get("linear_value_head_dim"), get("linear_conv_kernel_dim"))


class GDNState(NamedTuple):
    conv_q: jax.Array  # [B, K-1, Hk, dk]
    conv_k: jax.Array  # [B, K-1, Hk, dk]
    conv_v: jax.Array  # [B, K-1, Hv, dv]
    recurrent: jax.Array  # [B, Hv, dk, dv] float32


def init_state(batch: int, dims: GDNDims, dtype=jnp.float32) -> GDNState:
    """The state before the first token: zeros (as transformers' fresh cache)."""
    K, Hk, Hv, dk, dv = dims.conv_kernel, dims.num_k_heads, dims.num_v_heads, dims.head_k_dim, dims.head_v_dim
    return GDNState(jnp.zeros((batch, K - 1, Hk, dk), dtype), jnp.zeros((batch, K - 1, Hk, dk), dtype),
                    jnp.zeros((batch, K - 1, Hv, dv), dtype), jnp.zeros((batch, Hv, dk, dv), jnp.float32))


def causal_conv(x, w, state, lengths=None):
    """Depthwise causal conv, SiLU. x [B, T, *C]; w [K, *C]; state [B, K-1, *C] (inputs before x).

    lengths int [B] (optional): valid tokens of x per row (right padding); the returned state then
    holds the K-1 inputs ending at each row's last valid token.
    Returns (y [B, T, *C] in x.dtype, new_state [B, K-1, *C]).
    """
    K, T = w.shape[0], x.shape[1]
    xs = jnp.concatenate([state.astype(x.dtype), x], axis=1)  # [B, T+K-1, *C]; xs[t + K-1] = x[t]
    # torch's conv1d is a cross-correlation: tap i multiplies the input K-1-i steps back
    y = sum(xs[:, i:i + T].astype(jnp.float32) * w[i].astype(jnp.float32) for i in range(K))
    if lengths is None:
        new_state = xs[:, T:]
    else:
        new_state = jax.vmap(lambda row, n: jax.lax.dynamic_slice_in_dim(row, n, K - 1, axis=0))(xs, lengths)
    return jax.nn.silu(y).astype(x.dtype), new_state


def l2_normalize(x, eps=1e-6):
    """x * rsqrt(sum(x^2) + eps) over the last axis (FLA's / transformers' l2norm, eps inside)."""
    return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + eps)


def gates(a, b, a_log, dt_bias):
    """a, b [B, T, Hv] -> (g [B, T, Hv] float32 log-decay <= 0, beta [B, T, Hv] float32)."""
    g = -jnp.exp(a_log.astype(jnp.float32)) * jax.nn.softplus(a.astype(jnp.float32) + dt_bias.astype(jnp.float32))
    beta = jax.nn.sigmoid(b).astype(jnp.float32)  # transformers: sigmoid in the model dtype
    return g, beta


def _prepare(q, k, v, g, beta, qk_l2norm):
    """q, k [B, T, Hk, dk], v [B, T, Hv, dv] -> float32 q, k [B, T, Hv, dk] (normed, q scaled), v, g, beta."""
    r = v.shape[2] // k.shape[2]
    q, k = (jnp.repeat(t.astype(jnp.float32), r, axis=2) for t in (q, k))  # v head h <- key head h // r
    if qk_l2norm:
        q, k = l2_normalize(q), l2_normalize(k)
    q = q * (q.shape[-1] ** -0.5)
    return q, k, v.astype(jnp.float32), g.astype(jnp.float32), beta.astype(jnp.float32)


def _zero_state(q, v):
    B, _, H, dk = q.shape
    return jnp.zeros((B, H, dk, v.shape[-1]), jnp.float32)


def recurrent_gated_delta_rule(q, k, v, g, beta, state=None, qk_l2norm=True):
    """Token by token. q, k [B, T, Hk, dk]; v [B, T, Hv, dv]; g, beta [B, T, Hv]; state [B, Hv, dk, dv].

    Returns (o [B, T, Hv, dv] float32, final state [B, Hv, dk, dv] float32).
    """
    q, k, v, g, beta = _prepare(q, k, v, g, beta, qk_l2norm)
    S0 = _zero_state(q, v) if state is None else state.astype(jnp.float32)

    def step(S, xs):  # S [B, H, dk, dv]; q_t, k_t [B, H, dk]; v_t [B, H, dv]; g_t, b_t [B, H]
        q_t, k_t, v_t, g_t, b_t = xs
        S = S * jnp.exp(g_t)[..., None, None]
        predicted = jnp.einsum("bhk,bhkv->bhv", k_t, S, precision=_HI)
        delta = (v_t - predicted) * b_t[..., None]
        S = S + k_t[..., :, None] * delta[..., None, :]
        return S, jnp.einsum("bhk,bhkv->bhv", q_t, S, precision=_HI)

    time_major = [jnp.moveaxis(t, 1, 0) for t in (q, k, v, g, beta)]
    S, o = jax.lax.scan(step, S0, time_major)
    return jnp.moveaxis(o, 0, 1), S


def chunk_gated_delta_rule(q, k, v, g, beta, state=None, chunk_size=64, qk_l2norm=True):
    """Chunk-wise (WY/UT) form of recurrent_gated_delta_rule: same arguments, same results.

    Within a chunk (positions i, j; G_i = sum of g up to i; S0 the state entering the chunk) the
    value each token writes is u_j = beta_j (v_j - (decayed state before j)^T k_j); unrolled,
    (I + A) u = beta v - beta exp(G) K S0 with A[i, j] = beta_i exp(G_i - G_j) k_i.k_j for j < i,
    so u comes from one unit-lower-triangular solve per chunk; then
    o_i = exp(G_i) S0^T q_i + sum_{j<=i} exp(G_i - G_j) (q_i.k_j) u_j and
    S_end = exp(G_C) S0 + sum_j exp(G_C - G_j) k_j u_j^T. Every exp has a non-positive argument.
    T need not be a multiple of chunk_size: the tail is padded with g = 0, beta = 0, k = 0, which
    leaves the state unchanged.
    """
    q, k, v, g, beta = _prepare(q, k, v, g, beta, qk_l2norm)
    B, T, H, dk = q.shape
    dv, C = v.shape[-1], chunk_size
    S0 = _zero_state(q, v) if state is None else state.astype(jnp.float32)
    N = -(-T // C)
    pad = N * C - T

    def chunks(t):  # [B, T, H, ...] -> [N, B, H, C, ...]
        t = jnp.pad(t, [(0, 0), (0, pad)] + [(0, 0)] * (t.ndim - 2))
        t = t.reshape(B, N, C, H, *t.shape[3:])
        return jnp.moveaxis(jnp.moveaxis(t, 1, 0), 2, 3)

    q, k, v, g, beta = (chunks(t) for t in (q, k, v, g, beta))  # q, k [N,B,H,C,dk]; v [N,B,H,C,dv]; g [N,B,H,C]
    G = jnp.cumsum(g, axis=-1)  # [N, B, H, C]
    causal = jnp.tril(jnp.ones((C, C), bool))  # i >= j
    decay = jnp.exp(jnp.where(causal, G[..., :, None] - G[..., None, :], -jnp.inf))  # [N,B,H,C,C]
    k_beta = k * beta[..., None]
    A = jnp.einsum("...id,...jd->...ij", k_beta, k, precision=_HI) * decay
    A = jnp.where(jnp.tril(jnp.ones((C, C), bool), -1), A, 0.0)
    L = A + jnp.eye(C, dtype=A.dtype)
    # One solve for both right-hand sides: on CPU, jaxlib's trsm splits its batch over XLA's intra-op pool
    # and waits for it, so two solves running at once on a two-thread pool deadlock (seen on 2 cores).
    rhs = jnp.concatenate([v * beta[..., None], k_beta * jnp.exp(G)[..., None]], axis=-1)
    solved = jax.lax.linalg.triangular_solve(L, rhs, left_side=True, lower=True, unit_diagonal=True)
    u_v, w_k = solved[..., :dv], solved[..., dv:]  # [N,B,H,C,dv], [N,B,H,C,dk]: u = u_v - w_k @ S0
    scores = jnp.einsum("...id,...jd->...ij", q, k, precision=_HI) * decay  # [N,B,H,C,C]
    q_read = q * jnp.exp(G)[..., None]  # reads S0 decayed to position i
    k_write = k * jnp.exp(G[..., -1:] - G)[..., None]  # writes decayed to the chunk end
    chunk_decay = jnp.exp(G[..., -1])[..., None, None]  # [N, B, H, 1, 1]

    def step(S, xs):  # S [B, H, dk, dv]
        u_v_c, w_k_c, scores_c, q_c, k_c, decay_c = xs
        u = u_v_c - jnp.einsum("bhck,bhkv->bhcv", w_k_c, S, precision=_HI)
        o = (jnp.einsum("bhck,bhkv->bhcv", q_c, S, precision=_HI)
             + jnp.einsum("bhij,bhjv->bhiv", scores_c, u, precision=_HI))
        S = S * decay_c + jnp.einsum("bhck,bhcv->bhkv", k_c, u, precision=_HI)
        return S, o

    S, o = jax.lax.scan(step, S0, (u_v, w_k, scores, q_read, k_write, chunk_decay))  # o [N,B,H,C,dv]
    o = jnp.moveaxis(o, 0, 1).transpose(0, 1, 3, 2, 4).reshape(B, N * C, H, dv)
    return o[:, :T], S


def gated_rms_norm(x, z, w, eps):
    """RMSNorm(x) * w * silu(z) over the last axis, as transformers' Qwen3_5RMSNormGated (norm before gate)."""
    xf = x.astype(jnp.float32)
    normed = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (w * normed.astype(x.dtype) * jax.nn.silu(z.astype(jnp.float32))).astype(x.dtype)


def gated_delta_net(p, x, state: GDNState | None = None, *, eps=1e-6, mode="chunk", chunk_size=64, lengths=None):
    """One Gated DeltaNet token mixer (no residual, no input norm). x [B, T, D] -> (y [B, T, D], GDNState).

    p: the layer's parameters (module docstring). state: carried from the previous chunk or
    decode step (None: zeros). mode: "chunk" (prefill) or "recurrent" (decode, or reference).
    lengths int [B] (optional): valid tokens per row of a right-padded chunk; padded tokens leave
    both states untouched (their outputs are garbage, to be ignored).
    """
    B, T, _ = x.shape
    _, Hv, dv = p["conv_v"].shape
    if state is None:
        K, Hk, dk = p["conv_q"].shape
        state = init_state(B, GDNDims(x.shape[-1], Hk, Hv, dk, dv, K), x.dtype)
    proj = lambda w: jnp.einsum("btd,d...->bt...", x, w)
    q, conv_q = causal_conv(proj(p["wq"]), p["conv_q"], state.conv_q, lengths)
    k, conv_k = causal_conv(proj(p["wk"]), p["conv_k"], state.conv_k, lengths)
    v, conv_v = causal_conv(proj(p["wv"]), p["conv_v"], state.conv_v, lengths)
    g, beta = gates(proj(p["wa"]), proj(p["wb"]), p["a_log"], p["dt_bias"])
    if lengths is not None:  # g = 0, beta = 0: the state passes a padded token unchanged
        valid = jnp.arange(T)[None, :, None] < lengths[:, None, None]
        g, beta = jnp.where(valid, g, 0.0), jnp.where(valid, beta, 0.0)
    if mode == "chunk":
        core, S = chunk_gated_delta_rule(q, k, v, g, beta, state.recurrent, chunk_size)
    elif mode == "recurrent":
        core, S = recurrent_gated_delta_rule(q, k, v, g, beta, state.recurrent)
    else:
        raise ValueError(f"gated_delta_net: mode must be 'chunk' or 'recurrent', not {mode!r}")
    y = gated_rms_norm(core.astype(x.dtype), proj(p["wz"]), p["norm"], eps)  # [B, T, Hv, dv]
    out = jnp.einsum("bthv,hvd->btd", y, p["wo"])
    return out, GDNState(conv_q, conv_k, conv_v, S)


# ---- Hugging Face layouts -> ours (numpy; names relative to the layer's `linear_attn.`) ----

def _common_from_hf(sd, dims: GDNDims) -> dict:
    Hk, Hv, dk, dv = dims.num_k_heads, dims.num_v_heads, dims.head_k_dim, dims.head_v_dim
    conv = np.asarray(sd["conv1d.weight"])[:, 0, :].T  # [C, 1, K] -> [K, C]; C = q | k | v channels
    K, kd = conv.shape[0], Hk * dk
    return {"conv_q": conv[:, :kd].reshape(K, Hk, dk), "conv_k": conv[:, kd:2 * kd].reshape(K, Hk, dk),
            "conv_v": conv[:, 2 * kd:].reshape(K, Hv, dv), "a_log": np.asarray(sd["A_log"]),
            "dt_bias": np.asarray(sd["dt_bias"]), "norm": np.asarray(sd["norm.weight"]),
            "wo": np.asarray(sd["out_proj.weight"]).T.reshape(Hv, dv, dims.hidden_size)}


def params_from_hf_qwen3_5(sd, dims: GDNDims) -> dict:
    """Qwen3.5 (separate in_proj_qkv / _z / _b / _a) -> our layer dict."""
    D, Hk, Hv, dk, dv = dims.hidden_size, dims.num_k_heads, dims.num_v_heads, dims.head_k_dim, dims.head_v_dim
    qkv, kd = np.asarray(sd["in_proj_qkv.weight"]).T, Hk * dk  # [D, 2*Hk*dk + Hv*dv]
    return {"wq": qkv[:, :kd].reshape(D, Hk, dk), "wk": qkv[:, kd:2 * kd].reshape(D, Hk, dk),
            "wv": qkv[:, 2 * kd:].reshape(D, Hv, dv), "wz": np.asarray(sd["in_proj_z.weight"]).T.reshape(D, Hv, dv),
            "wb": np.asarray(sd["in_proj_b.weight"]).T, "wa": np.asarray(sd["in_proj_a.weight"]).T,
            **_common_from_hf(sd, dims)}


def params_from_hf_qwen3_next(sd, dims: GDNDims) -> dict:
    """Qwen3-Next (fused in_proj_qkvz / in_proj_ba, grouped per key head) -> our layer dict.

    in_proj_qkvz rows, per key head: q (dk), k (dk), v (r*dv), z (r*dv); in_proj_ba rows, per key
    head: b (r), a (r). The conv channels are already q | k | v in head order, as Qwen3.5's.
    """
    D, Hk, Hv, dk, dv = dims.hidden_size, dims.num_k_heads, dims.num_v_heads, dims.head_k_dim, dims.head_v_dim
    r = Hv // Hk
    qkvz = np.asarray(sd["in_proj_qkvz.weight"]).T.reshape(D, Hk, 2 * dk + 2 * r * dv)
    ba = np.asarray(sd["in_proj_ba.weight"]).T.reshape(D, Hk, 2 * r)
    q, k, v, z = np.split(qkvz, [dk, 2 * dk, 2 * dk + r * dv], axis=-1)
    return {"wq": q, "wk": k, "wv": v.reshape(D, Hv, dv), "wz": z.reshape(D, Hv, dv),
            "wb": ba[..., :r].reshape(D, Hv), "wa": ba[..., r:].reshape(D, Hv), **_common_from_hf(sd, dims)}

