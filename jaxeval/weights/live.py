"""Live parameters from a training loop, made ready for the engine without leaving the devices.

The arrays are checked against the config's layout, mapped first when they are another model's tree
(jaxeval.weights.mapping), and kept where they are when their sharding is the one jaxeval's rules give
them on the mesh; only arrays laid out otherwise move, device to device (jax.device_put)."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding

from jaxeval.errors import ConfigError
from jaxeval.models.config import ModelConfig, config_from_hf, load_hf_config
from jaxeval.models.mesh import AXES, make_mesh
from jaxeval.weights.param_tree import check_param_tree, flatten, unflatten

DTYPE_NAMES = {jnp.dtype(jnp.float32): "float32", jnp.dtype(jnp.bfloat16): "bfloat16"}


def live_config(config) -> ModelConfig:
    """A ModelConfig from a ModelConfig, a Hugging Face config dict, or a folder / config.json path."""
    if isinstance(config, ModelConfig):
        return config
    if isinstance(config, dict):
        return config_from_hf(config, where="evaluate(config=...)")
    if isinstance(config, (str, Path)):
        return load_hf_config(config)
    raise ConfigError(f"evaluate: config= must be a ModelConfig, a config dict or a path, got {type(config).__name__}")


def pure_tree(params) -> dict:
    """A plain nested dict of arrays from a dict, an nnx.State or an NNX module."""
    from flax import nnx

    if isinstance(params, nnx.Module):
        params = nnx.state(params, nnx.Param)
    if isinstance(params, nnx.State):
        params = nnx.to_pure_dict(params)
    if not isinstance(params, dict):
        raise ConfigError(f"evaluate: params= must be a parameter tree (dict, nnx.State or NNX module), "
                          f"got {type(params).__name__}")
    return params


def placed_params(params, config: ModelConfig, *, mesh=None, dtype: str | None = None, mapping=None):
    """(params in jaxeval's layout on the engine's mesh, that mesh or None, the dtype name, how many
    arrays had to move to another sharding)."""
    tree = pure_tree(params)
    if mapping is not None:
        from jaxeval.weights.mapping import apply_mapping, load_mapping

        tree = apply_mapping(load_mapping(mapping), tree, config, where="evaluate(params=...)")
    flat = flatten(tree)
    check_param_tree(flat, config, "evaluate(params=...)")
    leaves = list(flat.values())
    if dtype is None:
        dtype = DTYPE_NAMES.get(jnp.dtype(leaves[0].dtype))
        if dtype is None:
            raise ConfigError(f"evaluate: parameters of dtype {leaves[0].dtype}; pass dtype='float32' or 'bfloat16'")
    if dtype not in ("float32", "bfloat16"):
        raise ConfigError(f"evaluate: dtype={dtype!r} is not supported (choose float32, bfloat16)")
    mesh = engine_mesh(leaves, config, mesh)
    target_dtype = jnp.dtype(dtype)
    flat = {path: (a if a.dtype == target_dtype else a.astype(target_dtype)) for path, a in flat.items()}
    if mesh is None:
        device = jax.devices()[0]
        moved = [p for p, a in flat.items() if getattr(a, "sharding", None) is None
                 or a.sharding.device_set != {device}]
        flat.update({p: jax.device_put(flat[p], device) for p in moved})
        return unflatten(flat), None, dtype, len(moved)
    from jaxeval.models.param_layout import param_axes, param_shapes
    from jaxeval.models.sharding import check_mesh_fits, param_shardings

    check_mesh_fits(config, mesh)
    targets = flatten(param_shardings(param_shapes(config), mesh, param_axes(config)))
    moved = [p for p, a in flat.items() if not _same_layout(a, targets[p])]
    flat.update({p: jax.device_put(flat[p], targets[p]) for p in moved})
    return unflatten(flat), mesh, dtype, len(moved)


def _same_layout(array, target: NamedSharding) -> bool:
    sharding = getattr(array, "sharding", None)
    return sharding is not None and sharding.is_equivalent_to(target, array.ndim)


def engine_mesh(leaves: list, config: ModelConfig, mesh):
    """The mesh the engine runs on: the one given, else the arrays' own when it has jaxeval's axes, else
    None when they sit on one device, else a jaxeval mesh over the devices they are spread on."""
    if mesh is not None:
        return make_mesh(mesh, num_heads=config.num_heads, num_kv_heads=config.num_kv_heads)
    sharding = getattr(leaves[0], "sharding", None)
    if sharding is None or len(sharding.device_set) == 1:
        return None
    if isinstance(sharding, NamedSharding) and tuple(sharding.mesh.axis_names) == AXES:
        return sharding.mesh
    devices = sorted(sharding.device_set, key=lambda d: d.id)
    return make_mesh("auto", devices=devices, num_heads=config.num_heads, num_kv_heads=config.num_kv_heads)
