"""One decoder for every supported family: Flax NNX parameters, layers stacked and scanned.

The module holds the parameters; the computation lives in pure functions over a plain dict of
arrays (`params = model.params()`), so the engine can jit them with explicit shardings and the
compile cost does not grow with depth (one scanned layer body).

The parameter layout (names, shapes, logical axes, HF names) is the one table in
jaxeval.models.param_layout.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxeval.models.attention import REGISTRY, get_attention
from jaxeval.models.cache_layer import CacheLayer, dense_layer, layer_of, write_layer
from jaxeval.models.config import ModelConfig
from jaxeval.models.kv_policy import attention_window, dense_kv, stored_kv, write_kv
from jaxeval.models.context import mesh_attention, stripe_order, write_chunk
from jaxeval.models.layer_stacks import layer_stacks
from jaxeval.models.mla import LATENT_NORM_EPS, mla_output, mla_queries_keys
from jaxeval.models.moe import sparse_moe
from jaxeval.models.moe_parallel import expert_parallel_routed
from jaxeval.models.quant import dense_weight
from jaxeval.models.param_layout import param, param_shapes
from jaxeval.models.rope import RopeTables, apply_rope, rope_tables, rotary_cos_sin
from jaxeval.models.sharding import READ_CACHE, constrain


class Decoder(nnx.Module):
    """A decoder-only LM. `Decoder(config, rngs=nnx.Rngs(0))` gives random weights (training)."""

    def __init__(self, config: ModelConfig, *, dtype=jnp.float32, rngs: nnx.Rngs):
        self.config = config
        init = nnx.initializers.normal(0.02)
        norm_init = 0.0 if config.norm_plus_one else 1.0

        def make(name, shape):
            kind = param(name).init
            if kind == "norm":
                return nnx.Param(jnp.full(shape, norm_init, dtype))
            if kind == "zeros":
                return nnx.Param(jnp.zeros(shape, dtype))
            return nnx.Param(init(rngs.params(), shape, dtype))

        shapes = param_shapes(config)
        self.embed = make("embed", shapes["embed"])
        self.final_norm = make("final_norm", shapes["final_norm"])
        if "lm_head" in shapes:
            self.lm_head = make("lm_head", shapes["lm_head"])
        for stack in layer_stacks(config):  # "layers", and "dense_layers" before it where the model has two stacks
            setattr(self, stack.name, nnx.Dict({k: make(k, s) for k, s in shapes[stack.name].items()}))

    def params(self) -> dict:
        """The parameters as a plain nested dict of arrays (what the pure functions take)."""
        return nnx.to_pure_dict(nnx.state(self, nnx.Param))

    def __call__(self, ids, backend: str = "xla"):
        """Full logits float32 [B, T, V] for training and small checks; reads use engine.read."""
        return forward_logits(self.params(), self.config, ids, backend)


def rms_norm(x, w, eps, plus_one, scale_float32=False, axis=-1):
    """RMSNorm in float32 as HF does: Llama casts back before scaling, Gemma and OLMo 2 scale in float32.

    axis: the dims normalised together, -1 or (-2, -1) (OLMo 2's q/k norm over all heads, w [heads, hd]).
    """
    xf = x.astype(jnp.float32)
    normed = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=axis, keepdims=True) + eps)
    if plus_one:
        return (normed * (1.0 + w.astype(jnp.float32))).astype(x.dtype)
    if scale_float32:
        return (w.astype(jnp.float32) * normed).astype(x.dtype)
    return w * normed.astype(x.dtype)


def _norm(c: ModelConfig, x, w, axis=-1):
    return rms_norm(x, w, c.rms_norm_eps, c.norm_plus_one, c.norm_scale_float32, axis)


def _scaled(x, scale: float):
    """x * a Python-float multiplier as torch computes it: in float32, rounded once to x's dtype."""
    return x if scale == 1.0 else (x.astype(jnp.float32) * jnp.float32(scale)).astype(x.dtype)


def embed_tokens(params, c: ModelConfig, ids):
    x = params["embed"][ids]
    if c.embed_scale != 1.0:  # Gemma casts the scale to the model dtype (Granite's multipliers are exact there)
        x = x * jnp.asarray(c.embed_scale, dtype=x.dtype)
    return x


def _activation(c: ModelConfig, x):
    return jax.nn.silu(x) if c.hidden_act == "silu" else jax.nn.gelu(x, approximate=True)


def attention_inputs(lp, c: ModelConfig, x, positions, rope):
    """x [B, T, D] -> q [B, T, H, hd], k, v [B, T, KV, hd]: normed, projected, biased, q/k-normed, rotated.

    positions int [T] (absolute); rope: this layer's (inv_freq float32 [R/2], scale float32 scalar).
    Latent attention (c.mla): q [B, T, H, dr + r], k [B, T, 1, dr + r] and v empty [B, T, 1, 0], the values
    being the keys (jaxeval.models.mla), so the value cache holds nothing.
    """
    h = _norm(c, x, lp["attn_norm"]) if c.pre_norm else x
    if c.mla is not None:
        q, k = mla_queries_keys(lp, c.mla, h, lambda x, w: rms_norm(x, w, LATENT_NORM_EPS, False))
        cos, sin = rotary_cos_sin(positions, *rope)
        q, k = apply_rope(q, cos, sin, c.rope_interleaved), apply_rope(k, cos, sin, c.rope_interleaved)
        return q, k, k[..., :0]
    q = jnp.einsum("btd,dhk->bthk", h, dense_weight(lp["wq"], h.dtype))
    k = jnp.einsum("btd,dhk->bthk", h, dense_weight(lp["wk"], h.dtype))
    v = jnp.einsum("btd,dhk->bthk", h, dense_weight(lp["wv"], h.dtype))
    if c.qkv_bias:
        q, k, v = q + lp["bq"], k + lp["bk"], v + lp["bv"]
    if c.qk_norm and c.qk_norm_over_heads:
        q = _norm(c, q, lp["q_norm_heads"], axis=(-2, -1))
        k = _norm(c, k, lp["k_norm_heads"], axis=(-2, -1))
    elif c.qk_norm:
        q = _norm(c, q, lp["q_norm"])
        k = _norm(c, k, lp["k_norm"])
    cos, sin = rotary_cos_sin(positions, *rope)
    q, k = apply_rope(q, cos, sin, c.rope_interleaved), apply_rope(k, cos, sin, c.rope_interleaved)
    if c.query_scale_beta:  # Ministral 3: queries scaled by position (float32, as the reference)
        steps = jnp.floor(positions.astype(jnp.float32) / jnp.float32(c.query_scale_span))
        q = q * (1.0 + c.query_scale_beta * jnp.log(1.0 + steps))[None, :, None, None].astype(q.dtype)
    return q, k, v


def layer_output(lp, c: ModelConfig, x, attn, mesh=None):
    """The rest of a layer after attention: x [B, T, D], attn [B, T, H, hd] -> x [B, T, D].
    mesh: where a MoE's experts are split over an `expert` axis (see mlp)."""
    if c.mla is not None:
        out = mla_output(lp, c.mla, attn)
    else:
        out = jnp.einsum("bthk,hkd->btd", attn, dense_weight(lp["wo"], attn.dtype))
    if c.o_bias:
        out = out + lp["bo"]
    if c.sandwich_norm:
        out = _norm(c, out, lp["post_attn_norm"])
    x = x + _scaled(out, c.residual_scale)
    out = mlp(lp, c, _norm(c, x, lp["mlp_norm"]) if c.pre_norm else x, mesh)
    if c.sandwich_norm:
        out = _norm(c, out, lp["post_mlp_norm"])
    return x + _scaled(out, c.residual_scale)


def mlp(lp, c: ModelConfig, h, mesh=None):
    """The feed-forward block on normed h [..., D]: the gated MLP, or the routed experts of a MoE (c.moe),
    expert-parallel on a mesh with expert > 1 (h [B, T, D] there; elsewhere XLA gathers what it needs)."""
    if c.moe is not None:
        experts = {ours: dense_weight(lp[name], h.dtype) for ours, name in _MOE_PARAMS.items() if name in lp}
        if "shared_router" in lp:  # Qwen3.5-MoE: the dense MLP's weights are its gated shared expert
            experts |= {"shared_gate": dense_weight(lp["w_gate"], h.dtype), "shared_up": dense_weight(lp["w_up"], h.dtype),
                        "shared_down": dense_weight(lp["w_down"], h.dtype), "shared_router": lp["shared_router"]}
        parallel = mesh is not None and mesh.shape["expert"] > 1
        return sparse_moe(experts, c.moe, h, routed=functools.partial(expert_parallel_routed, mesh) if parallel else None)
    inner = _activation(c, h @ dense_weight(lp["w_gate"], h.dtype)) * (h @ dense_weight(lp["w_up"], h.dtype))
    return inner @ dense_weight(lp["w_down"], inner.dtype)


# jaxeval.models.moe's names -> the layer's (the biases: gpt-oss only)
_MOE_PARAMS = {"router": "router", "w_gate": "moe_gate", "w_up": "moe_up", "w_down": "moe_down",
               "router_bias": "router_bias", "b_gate": "moe_gate_bias", "b_up": "moe_up_bias", "b_down": "moe_down_bias",
               "score_bias": "moe_score_bias", "shared_gate": "shared_gate", "shared_up": "shared_up",  # DeepSeek-V3
               "shared_down": "shared_down"}


def sink_logits(lp, c: ModelConfig):
    """The layer's learned attention-sink logits float [H] (gpt-oss), or None."""
    return lp["sinks"] if c.attention_sinks else None


def output_gate(lp, c: ModelConfig, x):
    """Qwen3.5's attention output gate: sigmoid(RMSNorm(x) @ wq_gate) [B, T, H, hd], applied before o_proj."""
    return jax.nn.sigmoid(jnp.einsum("btd,dhk->bthk", _norm(c, x, lp["attn_norm"]), dense_weight(lp["wq_gate"], x.dtype)))


def layer_forward(lp, c: ModelConfig, x, positions, rope, window, cache=None, start=0, backend="xla",
                  mesh=None, cache_sharded=True, policy=None, layer=None):
    """One decoder layer. x [B, T, D]; positions int [T] (absolute); rope: see attention_inputs;
    window int scalar (0 = none).

    cache: (k, v) [B, S, KV, hd] holding keys/values of positions < start; this chunk's are written
    at `start` and attention runs over the whole cache. Without a cache, attention is over x alone.
    On a mesh, attention runs per shard (jaxeval.models.context.mesh_attention); with context
    parallelism x and positions come in striped token order; cache_sharded: the cache is split
    over `context` along the sequence (the read cache) rather than whole (generate's).
    Returns (x, (k_new, v_new)) with k_new, v_new [B, T, KV, hd] in natural token order (under an
    int8 / fp8 KV cache, their QuantKV codes and scales: what the cache stores).
    policy: the run's KV-cache policy (jaxeval.models.kv_policy.KVPolicy, Runtime.kv_cache); None: exact.
    layer: None, or an int scalar: cache is then the stacked cache (k, v) [L, B, S, KV, hd] and this chunk's
    K/V are written into its layer `layer` in place, attention reading them there (jaxeval.models.cache_layer:
    the layer is never copied out for a backend that reads blocks); the second item returned is then the
    written stacked cache.
    """
    with jax.named_scope("attention"):  # profiles name each block's parts (jax.profiler, XLA dumps)
        q, k, v = attention_inputs(lp, c, x, positions, rope)
        latent = c.mla is not None  # the values are the keys; the value cache is empty (see attention_inputs)
        k, v = stored_kv(policy, k), stored_kv(policy, v)  # an int8 / fp8 cache: the chunk's codes, before it attends
        attend = get_attention(backend, c)  # static masks (splash, cudnn) need the model's layer windows
        if mesh is not None:  # (KV-cache policies are refused on a mesh at load)
            q = constrain(q, mesh, "batch", "sequence", "act_heads", "head_dim")
            # the layer's cache before the chunk: a copy of the layer (the shards gather it along the sequence)
            layer_cache = cache if layer is None or cache is None else tuple(layer_of(t, layer) for t in cache)
            if latent:
                attn, k, _ = mesh_attention(attend, q, k, k, None if cache is None else (layer_cache[0],) * 2, start,
                                            window, c.attention_scale, c.attn_logit_softcap, mesh, cache_sharded)
            else:
                attn, k, v = mesh_attention(attend, q, k, v, layer_cache, start, window, c.attention_scale,
                                            c.attn_logit_softcap, mesh, cache_sharded, sink_logits(lp, c))
            if layer is not None and cache is not None:  # each sequence shard writes its own part of the chunk
                write = (lambda t, n: write_chunk(t, n, start, mesh, READ_CACHE, layer)) if cache_sharded else \
                    (lambda t, n: write_layer(t, n, layer, start))
                cache = tuple(write(t, n) for t, n in zip(cache, (k, v)))
        else:
            if cache is None:
                keys, values, q_start = k, v, 0
            elif layer is None:
                keys, values = dense_kv(write_kv(cache[0], k, start), q.dtype), dense_kv(write_kv(cache[1], v, start),
                                                                                          q.dtype)
                q_start = start
            else:
                cache = tuple(write_layer(t, n, layer, start) for t, n in zip(cache, (k, v)))
                keys, values = (CacheLayer(t, layer, q.dtype) for t in cache)
                if not REGISTRY[backend].reads_cache_layer:  # a kernel takes the layer contiguous: one copy
                    keys, values = dense_layer(keys), dense_layer(values)
                q_start = start
            if latent:
                values = keys
            window, sinks = attention_window(policy, window)
            learned = {"sink_logits": sink_logits(lp, c)} if c.attention_sinks else {}  # the keyword only where used
            attn = attend(q, keys, values, q_start, window, c.attention_scale, c.attn_logit_softcap, **sinks,
                          **learned)
        if c.attention_output_gate:
            attn = attn * output_gate(lp, c, x).astype(attn.dtype)
    with jax.named_scope("output_and_mlp"):
        x = layer_output(lp, c, x, attn, mesh)
    return constrain(x, mesh, "batch", "sequence", "hidden"), (k, v) if layer is None or cache is None else cache


def run_layers(params, c: ModelConfig, x, positions, cache=None, start=0, backend="xla", mesh=None,
               cache_sharded=True, rope: RopeTables | None = None, policy=None):
    """Scan the stacked layers, stack by stack (jaxeval.models.layer_stacks). cache: (k, v) [L, B, S, KV, hd]
    holding positions < start (donated by the caller: written in place), or None.

    rope: RopeTables (inv_freq [L, R/2], scale [L]) for the sequence being read, computed on the
    host (jaxeval.models.rope.rope_tables); None: the tables of a sequence of x's length.
    On a mesh with context > 1 the chunk runs in striped token order (see jaxeval.models.context);
    cache_sharded, policy: see layer_forward.
    Returns (x [B, T, D] in natural token order, kv): with a cache, kv is the cache with this chunk's K/V
    written at start; without, the chunk's (k, v) [L, B, T, KV, hd].
    """
    if rope is None:
        rope = rope_tables(c, x.shape[1])
    rope = RopeTables(*(jnp.asarray(t) for t in rope))
    windows = jnp.asarray(np.array(c.layer_windows, dtype=np.int32))
    inverse = None
    if mesh is not None and mesh.shape["context"] > 1:
        order, inverse = (jnp.asarray(o) for o in stripe_order(x.shape[1], mesh.shape["context"]))
        x, positions = x[:, order], positions[order]
    x = constrain(x, mesh, "batch", "sequence", "hidden")

    layers = jnp.arange(c.num_layers, dtype=jnp.int32)

    def scan_stack(carry, stack):
        # with a cache, it rides in the carry and each layer writes its part in place (layer_forward's
        # `layer`); scanned over as xs, every layer's cache was sliced out (a copy) and the chunk written twice
        def body(carry, xs):
            lp, inv_freq, scale, window, layer = xs
            x, kv = carry if cache is not None else (carry, None)
            x, out = layer_forward(lp, stack.config, x, positions, (inv_freq, scale), window, kv, start, backend,
                                   mesh, cache_sharded, policy, layer=None if kv is None else layer)
            return ((x, out), None) if kv is not None else (x, out)

        rows = (lambda a: a) if stack.count == c.num_layers else (lambda a: a[stack.rows])
        return jax.lax.scan(body, carry, (params[stack.name], rows(rope.inv_freq), rows(rope.scale), rows(windows),
                                          rows(layers)))

    carry, new_kv = ((x, tuple(cache)) if cache is not None else x), []
    for stack in layer_stacks(c):
        carry, kv = scan_stack(carry, stack)
        new_kv.append(kv)
    if cache is not None:
        x, new_kv = carry
    else:
        x = carry
        new_kv = new_kv[0] if len(new_kv) == 1 else jax.tree.map(lambda *a: jnp.concatenate(a), *new_kv)
    if inverse is not None:
        x = x[:, inverse]
    return x, new_kv


def final_norm(params, c: ModelConfig, h):
    """h [..., D] -> the final RMSNorm of h (what the LM head reads; sentence embeddings pool it)."""
    return _norm(c, h, params["final_norm"])


def output_projection(params, c: ModelConfig, dtype=None):
    """[D, V] weight of the LM head (the embedding, transposed, when tied); a quantized head rebuilt in dtype."""
    return params["embed"].T if c.tie_word_embeddings else dense_weight(params["lm_head"], dtype)


def final_logits(params, c: ModelConfig, h):
    """h [..., D] (before the final norm) -> float32 logits [..., V], soft-capped where the family does."""
    h = _norm(c, h, params["final_norm"])
    logits = jnp.einsum("...d,dv->...v", h, output_projection(params, c, h.dtype), preferred_element_type=jnp.float32)
    if c.logits_scaling != 1.0:  # Granite divides the logits
        logits = logits / c.logits_scaling
    if c.final_logit_softcap:
        logits = jnp.tanh(logits / c.final_logit_softcap) * c.final_logit_softcap
    return logits


def forward_logits(params, c: ModelConfig, ids, backend="xla"):
    """ids int [B, T] -> float32 logits [B, T, V]. Materialises all logits: short inputs only."""
    x = embed_tokens(params, c, ids)
    x, _ = run_layers(params, c, x, jnp.arange(ids.shape[1]), backend=backend)
    return final_logits(params, c, x)
