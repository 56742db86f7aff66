"""The one logical-axis rules table: which mesh axes shard each named dimension.

Every sharded array in jaxeval (weights, activations, KV caches, logits) names its dimensions
with the logical names below; `spec(shape, names, mesh)` turns them into a PartitionSpec.

Rule for dimensions a mesh axis does not divide: that axis is dropped for that dimension (the
dimension is replicated over it). So kv_heads < tensor means K/V projections and caches are
replicated over `tensor` while query heads stay sharded; a vocabulary of 97 is replicated; a
batch of 1 is replicated over `data`. Attention heads are the exception: check_mesh_fits()
refuses a `tensor` size that does not divide the query heads, and one that neither divides nor
is a multiple of the KV heads, before anything compiles.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import check_hybrid_mesh
from jaxeval.models.mesh import MeshError, describe, mesh_sizes
from jaxeval.models.param_layout import PARAM_AXES

# logical name -> mesh axes, in order of preference
RULES: dict[str, tuple[str, ...]] = {
    # weights
    "vocab": ("tensor",),
    "embed": ("fsdp",),
    "heads": ("tensor",),
    "kv_heads": ("tensor",),
    "head_dim": (),
    "mlp": ("tensor",),
    "experts": ("expert",),  # MoE experts: E / expert per device (jaxeval.models.moe_parallel.expert_parallel_routed)
    "moe_mlp": ("tensor",),
    "shared_mlp": ("tensor",),  # DeepSeek-V3's shared experts
    # DeepSeek-V3's latent attention: the low ranks whole, heads split as any heads (jaxeval.models.mla)
    "q_lora": (), "kv_lora": (), "kv_lora_rope": (), "qk_dim": (), "kv_b_dim": (), "v_dim": (),
    "layers": (),
    "norm": (),
    "gdn_k_heads": ("tensor",),  # Gated DeltaNet key and value heads (hybrids), their weights and states
    "gdn_v_heads": ("tensor",),
    "conv_taps": (),
    "quant_rows": (),  # a quantized weight's flattened input rows or groups (jaxeval.weights.quant_sharding)
    # activations and logits
    "batch": ("data", "fsdp"),
    "sequence": ("context",),
    "hidden": (),
    "act_heads": ("tensor",),
    "act_kv_heads": ("tensor",),
    "act_mlp": ("tensor",),
    "act_vocab": ("tensor",),
    "read_rows": (),  # gathered read positions [K, D] and their outputs: small, replicated
    # KV caches: [L, B, S, KV, hd] (read) and [B, L, S, KV, hd] (generate)
    "cache_batch": ("data", "fsdp"),
    "cache_sequence": ("context",),  # read: a long text's cache is split over `context`
    "decode_sequence": (),  # generate: decode reads any cache position, so it is kept whole
    "cache_kv_heads": ("tensor",),
}

READ_CACHE = ("layers", "cache_batch", "cache_sequence", "cache_kv_heads", "head_dim")
# [L, B, KV, S, hd]: each layer, row and KV head's keys contiguous, the sequence second-minor (the decode
# step reads key blocks of every row in place; jaxeval.engine.kv_cache)
DECODE_CACHE = ("layers", "cache_batch", "cache_kv_heads", "decode_sequence", "head_dim")


def spec(shape, names, mesh: Mesh) -> P:
    """PartitionSpec for an array of `shape` whose dimensions have the logical `names`."""
    if len(shape) != len(names):
        raise ValueError(f"shape {tuple(shape)} has {len(shape)} dimensions, names {names} has {len(names)}")
    sizes, used, parts = mesh_sizes(mesh), set(), []
    for dim, name in zip(shape, names):
        axes, product = [], 1
        for axis in RULES[name]:
            if sizes[axis] > 1 and axis not in used and dim % (product * sizes[axis]) == 0:
                axes.append(axis)
                product *= sizes[axis]
        used.update(axes)
        parts.append(None if not axes else axes[0] if len(axes) == 1 else tuple(axes))
    return P(*parts)


def sharding(shape, names, mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, spec(shape, names, mesh))


def constrain(x, mesh: Mesh | None, *names):
    """Sharding constraint from logical names (a no-op without a mesh)."""
    if mesh is None:
        return x
    return jax.lax.with_sharding_constraint(x, sharding(x.shape, names, mesh))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def param_shardings(shapes: dict, mesh: Mesh, axes: dict | None = None) -> dict:
    """Nested dict of NamedSharding matching param_shapes(config); axes: the matching nested dict of logical
    axes (jaxeval.models.param_layout.param_axes; default PARAM_AXES, keyed by parameter name)."""
    axes = PARAM_AXES if axes is None else axes
    out = {}
    for name, shape in shapes.items():
        if isinstance(shape, dict):
            out[name] = param_shardings(shape, mesh, axes[name] if isinstance(axes.get(name), dict) else axes)
        else:
            out[name] = sharding(shape, axes[name], mesh)
    return out


def check_mesh_fits(config: ModelConfig, mesh: Mesh, prefill_chunk: int | None = None) -> None:
    """Refuse, before any compile, a mesh the model's heads or the prefill chunk cannot be split over."""
    check_hybrid_mesh(config, mesh)
    sizes = mesh_sizes(mesh)
    tp, cp = sizes["tensor"], sizes["context"]
    where = f"mesh {describe(mesh)}"
    if config.num_heads % tp:
        raise MeshError(f"{where}: tensor={tp} does not divide the model's num_attention_heads={config.num_heads}")
    kv = config.num_kv_heads
    if kv % tp and tp % kv:
        raise MeshError(f"{where}: tensor={tp} must divide num_key_value_heads={kv} or be a multiple of it "
                        "(K/V heads are then replicated)")
    ep = sizes["expert"]
    if ep > 1 and config.moe is None:
        raise MeshError(f"{where}: expert={ep} needs a mixture-of-experts model; this one has no experts "
                        "(put the devices on data, tensor or context)")
    if ep > 1 and config.moe.num_experts % ep:
        raise MeshError(f"{where}: expert={ep} does not divide the model's {config.moe.num_experts} routed experts")
    if prefill_chunk is not None and cp > 1 and prefill_chunk % (2 * cp):
        raise MeshError(f"{where}: prefill_chunk={prefill_chunk} must be a multiple of 2 * context = {2 * cp} "
                        "(each context shard takes one early and one late stripe of every chunk)")


def host_array(x, mesh: Mesh | None, names=None):
    """A host numpy array as a jax array: on a mesh, a global array every process builds from its copy."""
    x = np.asarray(x)
    if mesh is None:
        return jax.numpy.asarray(x)
    target = replicated(mesh) if names is None else sharding(x.shape, names, mesh)
    return jax.make_array_from_callback(x.shape, target, lambda index: x[index])


def zeros(shape, dtype, mesh: Mesh | None, names):
    """A zero array created straight into its sharding (no full copy on one device)."""
    if mesh is None:
        return jax.numpy.zeros(shape, dtype)
    return _zeros(tuple(shape), np.dtype(dtype), sharding(shape, names, mesh))()


@functools.lru_cache(maxsize=64)
def _zeros(shape, dtype, target):
    """One jitted zeros per (shape, dtype, sharding): a fresh jit each call would recompile every time."""
    return jax.jit(lambda: jax.numpy.zeros(shape, dtype), out_shardings=target)


def shard_params(params: dict, mesh: Mesh | None) -> dict:
    """Place a nested dict of host (or single-device) arrays on the mesh by the rules table."""
    if mesh is None:
        return jax.tree.map(jax.numpy.asarray, params)
    shapes = jax.tree.map(lambda a: tuple(a.shape), params)
    targets = param_shardings(shapes, mesh)
    return jax.tree.map(lambda a, s: _place(a, s), params, targets)


def _place(a, target: NamedSharding):
    if isinstance(a, jax.Array) and (target.is_fully_addressable or not a.is_fully_addressable):
        return jax.device_put(a, target)
    a = np.asarray(a)
    return jax.make_array_from_callback(a.shape, target, lambda index: a[index])
