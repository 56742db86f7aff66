"""Multi-host start-up and the one-writer rule.

Multi-host: call initialize_distributed() before anything touches a device (load_model and the
CLI do). It reads, in order, its arguments, then the environment:
    JAXEVAL_COORDINATOR=host:port  JAXEVAL_NUM_PROCESSES=N  JAXEVAL_PROCESS_ID=i
or JAXEVAL_DISTRIBUTED=1 alone (Cloud TPU / SLURM: jax.distributed.initialize() finds its peers).
With none of them set it does nothing (one process). Every process runs the same program on
the same inputs; is_writer() is True on process 0 only, the one that writes results.

Device meshes themselves: jaxeval.models.mesh.
"""

from __future__ import annotations

import os

import jax

from jaxeval.models.mesh import MeshError

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
