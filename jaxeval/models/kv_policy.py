"""KV-cache policies: what a read or a generation keeps of its keys and values (the exact cache: none).

A policy is a run setting (load_model(kv_cache=...), `--kv_cache`), carried as
Runtime.kv_cache (jaxeval.engine.runtime) so every jitted step sees it as static data; it is recorded in the results
(model.kv_cache, its label) and folded into the model fingerprint, hence into the run name.

- int8 / fp8: keys and values are stored as codes with one float32 scale per token and KV head
  (absmax over head_dim; int8 codes round(x / scale) in [-127, 127], fp8 float8_e4m3fn x / scale
  within +-448, round to nearest even), and rebuilt in the compute dtype where attention reads
  them. A chunk's own keys and values are quantized before its queries see them, so a chunked
  read sees what a token-by-token decode on that cache would.
- streaming (StreamingLLM): a query sees the first `sinks` positions and the last `window`
  positions (itself included). Positions keep their original RoPE indices: the paper re-indexes
  positions within the cache, jaxeval does not (the label says positions=original). Generation
  decodes from a bounded cache of sinks + window slots (jaxeval.engine.bounded_kv, a ring buffer);
  teacher-forced reads apply the bound as a mask over their chunked prefill's cache.
- snapkv (generation only): after a prompt's prefill, each layer and KV head keeps the
  `budget - window` prompt positions most attended by the prompt's last `window` queries (the
  softmax probabilities summed over those queries and over the KV head's query heads, then max-
  or average-pooled over `kernel` neighbouring positions, SnapKV's vote), plus the window: `budget`
  prompt positions in all, SnapKV's max_capacity_prompt; a prompt of at most `budget` tokens keeps
  everything. The first new token comes from the full prompt, as in SnapKV (compression follows
  the prefill); every later one sees the kept positions and the generated tokens, decoded from a
  cache holding only those (jaxeval.engine.bounded_kv; the mask over the full cache, keep, is the
  reference form it is tested against).

streaming and snapkv bound the full-attention layers; sliding-window layers keep their own window.
Policies run on one device with the xla or chunked backends' prefill (int8, fp8 and snapkv with
any backend); hybrids (Gated DeltaNet) and meshes are refused, each with one message.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxeval.errors import ConfigError

KINDS = ("exact", "int8", "fp8", "streaming", "snapkv")
CODE_DTYPES = {"int8": jnp.int8, "fp8": jnp.uint8}  # fp8: float8_e4m3fn codes kept as their bits (FP8_BITS)
# XLA's CPU backend widens a float8 array to f16 around every slice of it and every in-place update,
# so a decode step over float8 codes converted the whole cache per row; uint8 bits are sliced and
# written as they are, and read back as float8_e4m3fn where they are rebuilt (dense_kv).
FP8_BITS = jnp.float8_e4m3fn
CODE_MAX = {"int8": 127.0, "fp8": 448.0}  # 448: the largest finite float8_e4m3fn
DEFAULTS = {"streaming": {"sinks": 4, "window": 4096},
            "snapkv": {"budget": 1024, "observe": 32, "kernel": 7, "pool": "max"}}
FLAGS = {"sinks": "streaming", "window": "streaming", "budget": "snapkv", "observe": "snapkv", "kernel": "snapkv",
         "pool": "snapkv"}  # --kv_<name> -> the policy it belongs to
MASK_BACKENDS = ("xla", "chunked")  # the prefill backends that take a sink mask (streaming)


@dataclasses.dataclass(frozen=True)
class KVPolicy:
    kind: str  # int8 | fp8 | streaming | snapkv
    sinks: int = 0  # streaming: first positions always visible
    window: int = 0  # streaming: last positions visible; snapkv: the observation window (queries that vote)
    budget: int = 0  # snapkv: prompt positions kept per layer and KV head, the window included
    kernel: int = 1  # snapkv: pooling width (odd)
    pool: str = "max"  # snapkv: max | avg

    @property
    def quantized(self) -> bool:
        return self.kind in CODE_DTYPES

    @property
    def label(self) -> str:
        """How results and the fingerprint name it: int8, fp8, streaming:sinks=4,window=4096,positions=original, ..."""
        if self.kind == "streaming":
            return f"streaming:sinks={self.sinks},window={self.window},positions=original"
        if self.kind == "snapkv":
            return f"snapkv:budget={self.budget},window={self.window},kernel={self.kernel},pool={self.pool}"
        return self.kind


def from_flags(kind: str | None, **given) -> KVPolicy | None:
    """The policy of `--kv_cache KIND` and its --kv_<name> values (None: unset) -> KVPolicy, or None for exact.

    A value given to a policy that does not take it is refused, never ignored."""
    kind = kind or "exact"
    if kind not in KINDS:
        raise ConfigError(f"kv_cache={kind!r} is not a KV-cache policy (choose {', '.join(KINDS)})")
    for name, value in given.items():
        if value is not None and FLAGS[name] != kind:
            raise ConfigError(f"--kv_{name} applies to --kv_cache {FLAGS[name]}, not to --kv_cache {kind}")
    if kind == "exact":
        return None
    values = {**DEFAULTS.get(kind, {}), **{k: v for k, v in given.items() if v is not None}}
    if kind == "snapkv":
        values["window"] = values.pop("observe")
    return check_policy(KVPolicy(kind, **values))


def policy_of_flags(options) -> KVPolicy | None:
    """from_flags of the kv_cache and kv_<name> options (jaxeval.options.model.ModelOptions)."""
    return from_flags(options.kv_cache, **{name: getattr(options, f"kv_{name}") for name in FLAGS})


def check_policy(policy: KVPolicy) -> KVPolicy:
    """The policy itself, or one ConfigError naming the bad value."""
    if policy.kind not in KINDS[1:]:
        raise ConfigError(f"kv_cache={policy.kind!r} is not a KV-cache policy (choose {', '.join(KINDS)})")
    ints = {"streaming": ("sinks", "window"), "snapkv": ("budget", "window", "kernel")}.get(policy.kind, ())
    for name in ints:
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "sinks" else 1):
            raise ConfigError(f"kv_cache {policy.kind}: {name} must be an integer >= {0 if name == 'sinks' else 1}, "
                              f"got {value!r}")
    if policy.kind == "snapkv":
        if policy.budget <= policy.window:
            raise ConfigError(f"kv_cache snapkv: budget={policy.budget} must exceed the observation window "
                              f"{policy.window} (the window is part of the budget)")
        if policy.kernel % 2 == 0:
            raise ConfigError(f"kv_cache snapkv: kernel={policy.kernel} must be odd (centred pooling)")
        if policy.pool not in ("max", "avg"):
            raise ConfigError(f"kv_cache snapkv: pool={policy.pool!r} is not max or avg")
    return policy


def check_supported(policy: KVPolicy | None, config, mesh, attention: str) -> None:
    """One ConfigError where this model or run cannot use the policy."""
    if policy is None:
        return
    if config.linear_attention is not None:
        raise ConfigError(f"kv_cache={policy.label}: not supported for hybrid models ({config.model_type}: Gated "
                          "DeltaNet layers hold no KV cache); use the exact cache")
    if getattr(config, "mla", None) is not None:
        raise ConfigError(f"kv_cache={policy.label}: not supported for model_type={config.model_type!r} (its cache "
                          "is the compressed latent of multi-head latent attention); use the exact cache")
    if policy.kind == "snapkv" and getattr(config, "dense_layers", 0):
        raise ConfigError(f"kv_cache={policy.label}: not supported for a model whose first layers are dense "
                          f"(model_type={config.model_type!r}: two layer stacks); use another policy")
    if mesh is not None:
        raise ConfigError(f"kv_cache={policy.label}: not supported on a device mesh yet; run on one device")
    if policy.kind == "streaming" and attention not in MASK_BACKENDS:
        raise ConfigError(f"kv_cache={policy.label}: attention={attention!r} has a static mask without sinks; "
                          f"use {' or '.join(MASK_BACKENDS)}")


def check_read(policy: KVPolicy | None) -> None:
    """Teacher-forced reads have no prompt to compress before generating: SnapKV is refused there."""
    if policy is not None and policy.kind == "snapkv":
        raise ConfigError(f"kv_cache={policy.label} compresses a prompt's cache before generation; teacher-forced "
                          "reads (log-prob tasks such as agent_bench) cannot use it: use exact, int8, fp8 or "
                          "streaming")


# ---------------------------------------------------------------------------------------------
# Quantized storage


@dataclasses.dataclass(frozen=True)
class QuantKV:
    """Keys or values as codes [..., hd] (int8, or float8_e4m3fn as uint8 bits) and float32 scales [..., 1]."""

    codes: jax.Array
    scale: jax.Array

    @property
    def shape(self):
        return self.codes.shape


jax.tree_util.register_dataclass(QuantKV, data_fields=["codes", "scale"], meta_fields=[])


def quantize_kv(x, kind: str) -> QuantKV:
    """x [..., hd] -> codes and a scale per vector: scale = max|x| * (1 / CODE_MAX), a float32 product
    (XLA would turn a division by the constant into that product anyway); 1 for an all-zero vector."""
    xf = x.astype(jnp.float32)
    amax = jnp.max(jnp.abs(xf), axis=-1, keepdims=True)
    scale = jnp.where(amax > 0, amax * jnp.float32(1.0 / CODE_MAX[kind]), jnp.float32(1.0))
    y = jnp.clip(xf / scale, -CODE_MAX[kind], CODE_MAX[kind])
    if kind == "int8":
        return QuantKV(jnp.round(y).astype(jnp.int8), scale)
    return QuantKV(jax.lax.bitcast_convert_type(y.astype(FP8_BITS), CODE_DTYPES[kind]), scale)


def dense_kv(x, dtype):
    """The keys or values attention multiplies by: x itself, or QuantKV codes * scales in dtype."""
    if not isinstance(x, QuantKV):
        return x
    codes = jax.lax.bitcast_convert_type(x.codes, FP8_BITS) if x.codes.dtype == CODE_DTYPES["fp8"] else x.codes
    return (codes.astype(jnp.float32) * x.scale).astype(dtype)


def stored_kv(policy: KVPolicy | None, x):
    """What the cache holds of new keys or values x: x, or its QuantKV under int8 / fp8."""
    return quantize_kv(x, policy.kind) if policy is not None and policy.quantized else x


def new_kv_cache(policy: KVPolicy | None, shape, dtype, make):
    """An empty cache of `shape` [..., hd]: make(shape, dtype), or QuantKV codes and scales [..., 1]."""
    if policy is None or not policy.quantized:
        return make(shape, dtype)
    return QuantKV(make(shape, CODE_DTYPES[policy.kind]), make(tuple(shape[:-1]) + (1,), jnp.float32))


def write_kv(cache, new, start, axis: int = 1):
    """cache with new written at `start` along `axis` (leaf by leaf for QuantKV)."""
    return jax.tree.map(lambda c, n: jax.lax.dynamic_update_slice_in_dim(c, n.astype(c.dtype), start, axis=axis),
                        cache, new)


# ---------------------------------------------------------------------------------------------
# Masks


def attention_window(policy: KVPolicy | None, window) -> tuple:
    """(window, {"sinks": ...} or {}) a layer attends with: streaming bounds full-attention layers
    (window 0) to its window and sinks; sliding layers keep their own window and get no sinks."""
    if policy is None or policy.kind != "streaming":
        return window, {}
    full = window <= 0
    return jnp.where(full, policy.window, window), {"sinks": jnp.where(full, policy.sinks, 0)}


def snapkv_keep(votes, prefix_len, policy: KVPolicy, layer_window):
    """votes float32 [KV, S] (zero outside the prefix) -> keep bool [S, KV].

    prefix_len int scalar: the prompt positions before the observation window; slots from there on
    (the window, the prompt's last token, new tokens) are always kept, and so is everything on a
    sliding-window layer (layer_window > 0). Pooling pads as torch's max_pool1d (-inf) and
    avg_pool1d (zeros, divided by kernel); ties go to the earlier position (jax.lax.top_k).
    """
    kv, s = votes.shape
    slot = jnp.arange(s)
    prefix = slot < prefix_len
    pad = ((0, 0), (policy.kernel // 2, policy.kernel // 2))
    if policy.pool == "max":
        pooled = jax.lax.reduce_window(jnp.where(prefix, votes, -jnp.inf), -jnp.inf, jax.lax.max,
                                       (1, policy.kernel), (1, 1), pad)
    else:
        pooled = jax.lax.reduce_window(jnp.where(prefix, votes, 0.0), 0.0, jax.lax.add, (1, policy.kernel), (1, 1),
                                       pad) / policy.kernel
    pooled = jnp.where(prefix, pooled, -jnp.inf)
    _, chosen = jax.lax.top_k(pooled, min(policy.budget - policy.window, s))  # [KV, budget - window]
    picked = jnp.zeros((kv, s), bool).at[jnp.arange(kv)[:, None], chosen].set(True)
    keep = (picked & prefix) | ~prefix | (layer_window > 0)
    return keep.T
