"""The hybrid decoder (Qwen3.5): Gated DeltaNet layers and gated full-attention layers, scanned in groups.

Pure functions over the parameter dict of jaxeval.models.hybrid_layout, as transformers 5.x's
Qwen3_5DecoderLayer computes them: x + mixer(RMSNorm(x)), then x + MLP(RMSNorm(x)), every RMSNorm
(1 + w) in float32; the mixer is either
  - Gated DeltaNet (jaxeval.models.gated_delta: causal conv, chunked gated delta rule, gated RMSNorm), or
  - full attention with per-head (1 + w) q/k norms, partial rotary, and its output multiplied by
    sigmoid(gate) before o_proj, the gate a second query projection of the same normed input.

The cache (HybridCache) is what a long read carries from one prefill chunk to the next and what
decode continues from: the full layers' K/V [Lf, B, S, KV, hd] and the linear layers' GDN states
(conv inputs and float32 recurrent state, [Ll, B, ...]). Both read and generate keep it layer-major.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from jaxeval.models import gated_delta as gd
from jaxeval.models.decode_attention import decode_attention
from jaxeval.models.config import ModelConfig
from jaxeval.models.decoder import (_norm, attention_inputs, embed_tokens, final_logits, layer_forward, layer_output,
                                    mlp, output_gate)
from jaxeval.models.families import FULL
from jaxeval.models.hybrid_layout import (CONV_K_AXES, CONV_V_AXES, KV_CACHE_AXES, RECURRENT_AXES, full_layer_indices,
                                          hybrid_param_shapes, layer_groups)
from jaxeval.models.quant import dense_weight
from jaxeval.models.rope import RopeTables, rope_tables
from jaxeval.models.sharding import constrain, zeros


class HybridDecoder(nnx.Module):
    """The hybrid LM's parameters (jaxeval.models.hybrid_layout); `HybridDecoder(config, rngs=nnx.Rngs(0))`
    gives random weights initialised as transformers' Qwen3_5PreTrainedModel does."""

    def __init__(self, config: ModelConfig, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.config = config
        normal = nnx.initializers.normal(0.02)

        def make(name, shape):
            if name == "norm":  # the gated RMSNorm scales by w
                return nnx.Param(jnp.ones(shape, dtype))
            if name.endswith("norm"):  # every other RMSNorm scales by 1 + w
                return nnx.Param(jnp.zeros(shape, dtype))
            if name == "dt_bias":
                return nnx.Param(jnp.ones(shape, dtype))
            if name == "a_log":  # A ~ U(0.01, 16)
                return nnx.Param(jnp.log(jax.random.uniform(rngs.params(), shape, dtype, 0.01, 16.0)))
            return nnx.Param(normal(rngs.params(), shape, dtype))

        shapes = hybrid_param_shapes(config)
        for name in ("embed", "final_norm", "lm_head"):
            if name in shapes:
                setattr(self, name, make(name, shapes[name]))
        self.layers = nnx.Dict({k: make(k, s) for k, s in shapes["layers"].items()})
        self.linear_layers = nnx.Dict({k: make(k, s) for k, s in shapes["linear_layers"].items()})

    def params(self) -> dict:
        return nnx.to_pure_dict(nnx.state(self, nnx.Param))

    def __call__(self, ids, backend: str = "xla"):
        """Full logits float32 [B, T, V] for small checks; reads use jaxeval.engine.read."""
        return forward_logits(self.params(), self.config, ids, backend)


class HybridCache(NamedTuple):
    k: jax.Array  # [Lf, B, S, KV, hd]
    v: jax.Array  # [Lf, B, S, KV, hd]
    gdn: gd.GDNState  # conv_q, conv_k [Ll, B, K-1, Hk, dk]; conv_v [Ll, B, K-1, Hv, dv]; recurrent [Ll, B, Hv, dk, dv]


_CACHE_AXES = HybridCache(KV_CACHE_AXES, KV_CACHE_AXES, gd.GDNState(CONV_K_AXES, CONV_K_AXES, CONV_V_AXES,
                                                                 RECURRENT_AXES))


def _per_leaf(fn, cache: HybridCache) -> HybridCache:
    """fn(leaf, its logical axes) over the cache's leaves."""
    return HybridCache(fn(cache.k, _CACHE_AXES.k), fn(cache.v, _CACHE_AXES.v),
                       gd.GDNState(*(fn(a, names) for a, names in zip(cache.gdn, _CACHE_AXES.gdn))))


def new_cache(c: ModelConfig, batch: int, length: int, dtype, mesh=None, make=None) -> HybridCache:
    """Zeros: the cache before the first token (transformers' fresh cache); on a mesh, created in the rules'
    shardings (jaxeval.models.hybrid_layout: GDN states split by head over `tensor`). make(array, names):
    another way to build each leaf (jaxeval.aot: abstract arrays in those shardings)."""
    g = layer_groups(c.layer_types)
    kv_shape = (g.full_layers, batch, length, c.num_kv_heads, c.head_dim)
    state = gd.init_state(batch, c.linear_attention, dtype)
    kv = jax.ShapeDtypeStruct(kv_shape, jnp.dtype(dtype))
    shapes = HybridCache(kv, kv, gd.GDNState(*(jax.ShapeDtypeStruct((g.linear_layers, *s.shape), s.dtype)
                                               for s in state)))
    make = make or (lambda a, names: zeros(a.shape, a.dtype, mesh, names))
    return _per_leaf(make, shapes)  # separate buffers (donated)


def constrain_cache(cache: HybridCache, mesh) -> HybridCache:
    """The cache in the rules' shardings (a no-op without a mesh)."""
    return _per_leaf(lambda a, names: constrain(a, mesh, *names), cache)


def _mlp_residual(lp, c: ModelConfig, x):
    return x + mlp(lp, c, _norm(c, x, lp["mlp_norm"]))


def linear_layer(lp, c: ModelConfig, x, state: gd.GDNState, lengths=None, mode="chunk"):
    """A Gated DeltaNet layer. x [B, T, D]; state: this layer's GDNState [B, ...] -> (x, new state)."""
    mixer = {name: dense_weight(w, x.dtype) for name, w in lp.items()}  # quantized projections rebuilt here
    out, state = gd.gated_delta_net(mixer, _norm(c, x, lp["attn_norm"]), state, eps=c.rms_norm_eps, mode=mode,
                                    lengths=lengths)
    return _mlp_residual(lp, c, x + out.astype(x.dtype)), state


SHARD_MAP_BACKENDS = ("splash",)  # attention kernels XLA cannot partition: run per shard on a mesh


def full_layer(lp, c: ModelConfig, x, positions, rope, cache=None, start=0, backend="xla", mesh=None, layer=None):
    """A gated full-attention layer: the one decoder's layer (jaxeval.models.decoder.layer_forward, whose
    output gate c.attention_output_gate turns on), without a window. cache: (k, v) [B, S, KV, hd] holding
    positions < start, or None. Returns (x, (k, v) [B, T, KV, hd] of this chunk). layer: None, or an int
    scalar: cache is then the stacked full-layer cache [Lf, B, S, KV, hd], written in place at that layer
    and returned in place of the chunk's K/V (layer_forward's `layer`).

    On a mesh XLA partitions the layer from the shardings, except a kernel it cannot partition (splash, a
    Mosaic kernel: "cannot be automatically partitioned"), which runs per shard in the decoder's
    shard_map (jaxeval.models.context.mesh_attention; the hybrid's cache is whole along the sequence)."""
    per_shard = mesh if backend in SHARD_MAP_BACKENDS else None
    return layer_forward(lp, c, x, positions, rope, jnp.int32(0), cache, start, backend, per_shard,
                         cache_sharded=False, layer=layer)


def _grouped(tree, groups: int):
    """Leaves [G * n, ...] -> [G, n, ...]."""
    return jax.tree.map(lambda a: a.reshape(groups, a.shape[0] // groups, *a.shape[1:]), tree)


def _ungrouped(tree):
    return jax.tree.map(lambda a: a.reshape(a.shape[0] * a.shape[1], *a.shape[2:]), tree)


def _at(tree, i: int):
    return jax.tree.map(lambda a: a[i], tree)


def _stack(items, empty_shape, dtype):
    return jnp.stack(items) if items else jnp.zeros((0, *empty_shape), dtype)


def _full_rope(c: ModelConfig, rope: RopeTables) -> RopeTables:
    """The full-attention layers' rows of the per-layer rope tables ([..., L, R/2] -> [..., Lf, R/2])."""
    rows = jnp.asarray(full_layer_indices(c), jnp.int32)
    return RopeTables(jnp.take(jnp.asarray(rope.inv_freq), rows, axis=-2), jnp.take(jnp.asarray(rope.scale), rows,
                                                                                     axis=-1))


def run_layers(params, c: ModelConfig, x, positions, cache: HybridCache | None, start=0, backend="xla",
               rope: RopeTables | None = None, lengths=None, mesh=None):
    """Scan the layer groups over one chunk. x [B, T, D]; positions int [T] (absolute).

    cache: the state before this chunk (K/V of positions < start, GDN states after position start - 1),
    or None (a sequence on its own: attention over x, zero GDN states). lengths int [B] (optional): valid
    tokens per row of a right-padded chunk (their GDN states stop there). mesh: see full_layer.
    Returns (x [B, T, D], (k, v), GDNState [Ll, B, ...] after it); (k, v): with a cache, the cache's
    [Lf, B, S, KV, hd] with this chunk written at start; without, this chunk's [Lf, B, T, KV, hd].
    """
    g = layer_groups(c.layer_types)
    B, T, _ = x.shape
    rope = _full_rope(c, rope_tables(c, T) if rope is None else rope)
    states = new_cache(c, B, 0, x.dtype).gdn if cache is None else cache.gdn
    # the K/V cache rides in the carry, each full layer writing its part in place where attention reads it
    # (decoder.layer_forward's `layer`); scanned over as xs, each group's layers were sliced out (copied)
    kv = None if cache is None else (cache.k, cache.v)
    xs = (_grouped(params["layers"], g.groups), _grouped(params["linear_layers"], g.groups),
          _grouped(tuple(rope), g.groups), _grouped(states, g.groups), jnp.arange(g.groups, dtype=jnp.int32))

    def body(carry, xs):
        x, kv = carry
        full_p, linear_p, (inv_freq, scale), group_states, group = xs
        ks, vs, new_states, fi, li = [], [], [], 0, 0
        for kind in g.pattern:
            if kind == FULL:
                layer = None if kv is None else group * g.full_per_group + fi
                x, out = full_layer(_at(full_p, fi), c, x, positions, (inv_freq[fi], scale[fi]), kv, start, backend,
                                    mesh, layer)
                if kv is None:
                    ks.append(out[0])
                    vs.append(out[1])
                else:
                    kv = out
                fi += 1
            else:
                x, state = linear_layer(_at(linear_p, li), c, x, _at(group_states, li), lengths)
                new_states.append(state)
                li += 1
        kv_shape = (B, T, c.num_kv_heads, c.head_dim)
        chunk_kv = None if kv is not None else (_stack(ks, kv_shape, x.dtype), _stack(vs, kv_shape, x.dtype))
        return (x, kv), (chunk_kv, jax.tree.map(lambda *s: jnp.stack(s), *new_states) if new_states else group_states)

    (x, kv), (chunk_kv, new_states) = jax.lax.scan(body, (x, kv), xs)
    if kv is None:
        kv = _ungrouped(chunk_kv[0]), _ungrouped(chunk_kv[1])
    return x, kv, gd.GDNState(*_ungrouped(tuple(new_states)))


def prefill(params, c: ModelConfig, chunk_ids, start, cache: HybridCache, backend="xla", rope=None, lengths=None,
            mesh=None):
    """One prefill chunk into the cache: chunk_ids int [B, C] at positions start .. start + C - 1 (mesh: the
    splash kernel's shard_map, full_layer).
    Returns (final hidden states [B, C, D] before the final norm, the cache after the chunk)."""
    x = embed_tokens(params, c, chunk_ids)
    x, (k, v), states = run_layers(params, c, x, start + jnp.arange(chunk_ids.shape[1]), cache, start, backend, rope,
                                   lengths, mesh)  # k, v: the cache, this chunk written
    return x, HybridCache(k, v, states)


def decode_row(params, c: ModelConfig, cache_k, cache_v, states: gd.GDNState, token, position, rope: RopeTables,
               row=0, rows: int = 1):
    """One sequence, one token (int scalar) at `position`: cache_k, cache_v [Lf, S, KV, hd] holding
    positions < position, states: GDNState without the batch axis ([Ll, ...]); rope: this row's tables
    (inv_freq [L, R/2], scale [L]). The cache is only read (each full layer sees its own new K/V at
    `position`, decode_attention's new_kv); the new K/V come back for the batch step to write once
    (a per-layer write of a vmapped row is a scatter over the whole cache). The GDN layers step their
    recurrent form. row, rows: the batch step passes the whole cache with its layer and row axes
    merged, [Lf * rows, S, KV, hd] (a free reshape of [Lf, B, ...]), unbatched, and this row's index:
    vmapping the cache over its row axis 1 would transpose the whole cache every step.
    Returns (float32 logits [V], new keys, new values [Lf, KV, hd], states)."""
    g = layer_groups(c.layer_types)
    rope = _full_rope(c, rope)
    positions = position + jnp.arange(1)
    batched = jax.tree.map(lambda s: s[:, None], states)  # [Ll, 1, ...]: the GDN functions take a batch axis

    def body(x, xs):
        full_p, linear_p, (inv_freq, scale), group_states, group = xs
        new_states, new_kv, fi, li = [], [], 0, 0
        for kind in g.pattern:
            if kind == FULL:
                lp, i = _at(full_p, fi), group * g.full_per_group + fi
                q, k, v = attention_inputs(lp, c, x, positions, (inv_freq[fi], scale[fi]))  # [1, 1, H or KV, hd]
                k, v = k[0, 0].astype(cache_k.dtype), v[0, 0].astype(cache_v.dtype)
                attn = decode_attention(q[0, 0], cache_k, cache_v, i * rows + row, position, jnp.int32(0),
                                        c.attention_scale, new_kv=(k, v, position))
                x = layer_output(lp, c, x, attn[None, None] * output_gate(lp, c, x).astype(attn.dtype))
                new_kv.append((k, v))
                fi += 1
            else:
                x, state = linear_layer(_at(linear_p, li), c, x, _at(group_states, li), mode="recurrent")
                new_states.append(state)
                li += 1
        stacked = jax.tree.map(lambda *s: jnp.stack(s), *new_states) if new_states else group_states
        return x, (stacked, jax.tree.map(lambda *n: jnp.stack(n), *new_kv))

    x = embed_tokens(params, c, token[None, None])
    xs = (_grouped(params["layers"], g.groups), _grouped(params["linear_layers"], g.groups),
          _grouped(tuple(rope), g.groups), _grouped(batched, g.groups), jnp.arange(g.groups))
    x, (new_states, (k_new, v_new)) = jax.lax.scan(body, x, xs)
    states = jax.tree.map(lambda s: s[:, 0], _ungrouped(new_states))
    k_new, v_new = (n.reshape((-1,) + n.shape[2:]) for n in (k_new, v_new))  # [groups, per group, ...] -> [Lf, ...]
    return final_logits(params, c, x[0, 0]), k_new, v_new, gd.GDNState(*states)


def forward_logits(params, c: ModelConfig, ids, backend="xla"):
    """ids int [B, T] -> float32 logits [B, T, V]. Materialises all logits: short inputs only."""
    x, _, _ = run_layers(params, c, embed_tokens(params, c, ids), jnp.arange(ids.shape[1]), None, backend=backend)
    return final_logits(params, c, x)
