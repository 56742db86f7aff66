"""Device meshes, the multi-host start-up and the one-writer rule.

Mesh axes are fixed: ("data", "fsdp", "tensor", "context").
- data: sequences of a batch (generate rows); fsdp: batch plus the weights' embed dimension;
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

Multi-host: call initialize_distributed() before anything touches a device (load_model and the
CLI do). It reads, in order, its arguments, then the environment:
    JAXEVAL_COORDINATOR=host:port  JAXEVAL_NUM_PROCESSES=N  JAXEVAL_PROCESS_ID=i
or JAXEVAL_DISTRIBUTED=1 alone (Cloud TPU / SLURM: jax.distributed.initialize() finds its peers).
With none of them set it does nothing (one process). Every process runs the same program on
the same inputs; is_writer() is True on process 0 only, the one that writes results.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

from jaxeval.errors import ConfigError

AXES = ("data", "fsdp", "tensor", "context")


class MeshError(ConfigError):
    """A mesh spec that is malformed, does not use the devices, or does not fit the model."""


def parse_mesh_spec(spec: str) -> dict[str, int]:
    """"data=2,tensor=4" -> {"data": 2, "fsdp": 1, "tensor": 4, "context": 1}."""
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


def auto_mesh_shape(num_devices: int, num_heads: int | None = None, num_kv_heads: int | None = None) -> dict[str, int]:
    """Tensor parallel as far as the heads allow, context parallel over the rest.

    tensor: the largest divisor of the device count that divides the query heads and divides, or
    is a multiple of, the KV heads (jaxeval.models.sharding.check_mesh_fits).
    """
    def fits(d):
        kv_ok = not num_kv_heads or num_kv_heads % d == 0 or d % num_kv_heads == 0
        return num_devices % d == 0 and (not num_heads or num_heads % d == 0) and kv_ok

    tensor = max(d for d in range(1, num_devices + 1) if fits(d)) if num_heads else 1
    return {"data": 1, "fsdp": 1, "tensor": tensor, "context": num_devices // tensor}


def make_mesh(spec: str | dict | Mesh | None = None, *, devices=None, num_heads: int | None = None,
              num_kv_heads: int | None = None) -> Mesh:
    """A 4-axis mesh over `devices` (default: every device of every process); see the module docstring.

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
        sizes = auto_mesh_shape(len(devices), num_heads, num_kv_heads)
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


_DISTRIBUTED = {"done": False}


def initialize_distributed(coordinator: str | None = None, num_processes: int | None = None,
                           process_id: int | None = None) -> bool:
    """Join a multi-process run (see the module docstring). Returns True when running multi-process."""
    if _DISTRIBUTED["done"] or jax.distributed.is_initialized():
        return jax.process_count() > 1
    env = os.environ
    coordinator = coordinator or env.get("JAXEVAL_COORDINATOR")
    num_processes = num_processes if num_processes is not None else _env_int("JAXEVAL_NUM_PROCESSES")
    process_id = process_id if process_id is not None else _env_int("JAXEVAL_PROCESS_ID")
    auto = env.get("JAXEVAL_DISTRIBUTED", "").lower() in ("1", "true", "auto")
    if coordinator is None and num_processes is None and process_id is None and not auto:
        return False
    if coordinator is not None and (num_processes is None or process_id is None):
        raise MeshError("multi-host: JAXEVAL_COORDINATOR needs JAXEVAL_NUM_PROCESSES and JAXEVAL_PROCESS_ID too")
    try:
        if coordinator is None:
            jax.distributed.initialize()
        else:
            jax.distributed.initialize(coordinator, num_processes, process_id)
    except RuntimeError as e:
        raise MeshError(f"multi-host start-up failed ({e}); initialize_distributed() must run before "
                        "anything uses a JAX device") from None
    _DISTRIBUTED["done"] = True
    return jax.process_count() > 1


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise MeshError(f"environment variable {name}={value!r} must be an integer") from None


def is_writer() -> bool:
    """True on the one process that writes results, journals and reports (process 0)."""
    return jax.process_index() == 0
