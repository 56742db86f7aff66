"""Device meshes: the five named axes, mesh specs, and the sizes the sharding rules read.

Mesh axes are fixed: ("data", "fsdp", "expert", "tensor", "context").
- data: sequences of a batch (generate rows); fsdp: batch plus the weights' embed dimension;
- expert: a mixture of experts' experts, each device holding E / expert of them (expert
  parallelism, jaxeval.models.moe_parallel.expert_parallel_routed); models without experts refuse it;
- tensor: attention heads, MLP width and vocabulary;
- context: the tokens of a prefill chunk (context parallelism, see jaxeval.models.context).
What each logical tensor dimension is sharded over lives in one table, jaxeval.models.sharding.

    make_mesh("data=2,tensor=2,context=2")   # unnamed axes are 1; the product must be the device count
    make_mesh("tensor=4")                    # on 8 devices: an error (4 does not use all 8)
    make_mesh("auto", num_heads=8, num_kv_heads=2)  # tensor: the largest divisor of the device
                                             # count the heads allow, context: the rest
    make_mesh(existing_jax_mesh)             # checked for the axis names, returned as is

Axes are typed Auto: XLA propagates shardings from the parameters, the caches and the
constraints the engine places; attention runs per shard under shard_map.

Multi-host start-up and the one-writer rule: jaxeval.engine.distributed.
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from jaxeval.errors import ConfigError

AXES = ("data", "fsdp", "expert", "tensor", "context")


class MeshError(ConfigError):
    """A mesh spec that is malformed, does not use the devices, or does not fit the model."""


def parse_mesh_spec(spec: str) -> dict[str, int]:
    """"data=2,tensor=4" -> {"data": 2, "fsdp": 1, "expert": 1, "tensor": 4, "context": 1}."""
    sizes = dict.fromkeys(AXES, 1)
    seen = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or name not in AXES:
            raise MeshError(f"mesh {spec!r}: {part!r} is not AXIS=SIZE with AXIS one of {', '.join(AXES)}")
        if name in seen:
            raise MeshError(f"mesh {spec!r}: axis {name!r} is given twice")
        try:
            size = int(value)
        except ValueError:
            size = 0
        if size < 1:
            raise MeshError(f"mesh {spec!r}: axis {name!r} needs a positive integer size, got {value.strip()!r}")
        sizes[name] = size
        seen.add(name)
    return sizes


def auto_mesh_shape(num_devices: int, num_heads: int | None = None, num_kv_heads: int | None = None,
                    context_parallel: bool = True) -> dict[str, int]:
    """Tensor parallel as far as the heads allow, context parallel over the rest (data parallel without
    context_parallel: the hybrids, jaxeval.models.hybrid_layout.check_hybrid_mesh).

    tensor: the largest divisor of the device count that divides the query heads and divides, or
    is a multiple of, the KV heads (jaxeval.models.sharding.check_mesh_fits).
    """
    def fits(d):
        kv_ok = not num_kv_heads or num_kv_heads % d == 0 or d % num_kv_heads == 0
        return num_devices % d == 0 and (not num_heads or num_heads % d == 0) and kv_ok

    tensor = max(d for d in range(1, num_devices + 1) if fits(d)) if num_heads else 1
    rest = num_devices // tensor
    return {"data": 1 if context_parallel else rest, "fsdp": 1, "expert": 1, "tensor": tensor,
            "context": rest if context_parallel else 1}


def make_mesh(spec: str | dict | Mesh | None = None, *, devices=None, num_heads: int | None = None,
              num_kv_heads: int | None = None, context_parallel: bool = True) -> Mesh:
    """A 5-axis mesh over `devices` (default: every device of every process); see the module docstring.

    spec None means one device (the first): the unsharded engine on a trivial mesh.
    """
    if isinstance(spec, Mesh):
        missing = [a for a in AXES if a not in spec.axis_names]
        extra = [a for a in spec.axis_names if a not in AXES]
        if missing or extra:
            raise MeshError(f"mesh axes {spec.axis_names} must be exactly {AXES}")
        return spec
    devices = list(jax.devices() if devices is None else devices)
    if spec is None:
        devices, sizes = devices[:1], dict.fromkeys(AXES, 1)
    elif isinstance(spec, dict):
        sizes = parse_mesh_spec(",".join(f"{k}={v}" for k, v in spec.items()))
    elif spec.strip() == "auto":
        sizes = auto_mesh_shape(len(devices), num_heads, num_kv_heads, context_parallel)
    else:
        sizes = parse_mesh_spec(spec)
    total = math.prod(sizes.values())
    if total != len(devices):
        shown = ",".join(f"{a}={n}" for a, n in sizes.items() if n > 1) or "1 device"
        raise MeshError(f"mesh {shown} needs {total} devices, but {len(devices)} are available "
                        "(the axis sizes must multiply to the device count)")
    shape = tuple(sizes[a] for a in AXES)
    if len(devices) == len(jax.devices()) and devices == list(jax.devices()):
        return jax.make_mesh(shape, AXES, axis_types=(AxisType.Auto,) * len(AXES))
    return Mesh(np.array(devices).reshape(shape), AXES, axis_types=(AxisType.Auto,) * len(AXES))


def mesh_sizes(mesh: Mesh | None) -> dict[str, int]:
    if mesh is None:
        return dict.fromkeys(AXES, 1)
    return {a: int(mesh.shape[a]) for a in AXES}


def describe(mesh: Mesh | None) -> str:
    """"data=2,tensor=2,context=2" (axes of size 1 left out; "1 device" when all are)."""
    return ",".join(f"{a}={n}" for a, n in mesh_sizes(mesh).items() if n > 1) or "1 device"
