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
    coordinator, num_processes, process_id, auto = distributed_settings(coordinator, num_processes, process_id)
    if coordinator is None and not auto:
        return False
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


AUTO_VALUES, OFF_VALUES = ("1", "true", "auto"), ("", "0", "false")


def distributed_settings(coordinator: str | None = None, num_processes: int | None = None,
                         process_id: int | None = None) -> tuple[str | None, int | None, int | None, bool]:
    """(coordinator, process count, process id, auto) from the arguments, else the environment,
    checked for agreement without touching a device (so `validate` and `plan` check them too):
    a MeshError naming the variable for a value out of range or variables that contradict."""
    env = os.environ
    coordinator = coordinator or env.get("JAXEVAL_COORDINATOR") or None
    num_processes = num_processes if num_processes is not None else _env_int("JAXEVAL_NUM_PROCESSES")
    process_id = process_id if process_id is not None else _env_int("JAXEVAL_PROCESS_ID")
    flag = env.get("JAXEVAL_DISTRIBUTED", "").strip().lower()
    if flag not in AUTO_VALUES + OFF_VALUES:
        raise MeshError(f"environment variable JAXEVAL_DISTRIBUTED={flag!r} must be 1 (or true, auto) or 0")
    auto = flag in AUTO_VALUES
    given = coordinator is not None or num_processes is not None or process_id is not None
    if auto and given:
        raise MeshError("multi-host: JAXEVAL_DISTRIBUTED=1 finds its peers itself; it contradicts "
                        "JAXEVAL_COORDINATOR / JAXEVAL_NUM_PROCESSES / JAXEVAL_PROCESS_ID (set one way or the other)")
    if coordinator is not None and (num_processes is None or process_id is None):
        raise MeshError("multi-host: JAXEVAL_COORDINATOR needs JAXEVAL_NUM_PROCESSES and JAXEVAL_PROCESS_ID too")
    if given and coordinator is None:
        raise MeshError("multi-host: JAXEVAL_NUM_PROCESSES / JAXEVAL_PROCESS_ID need JAXEVAL_COORDINATOR=host:port "
                        "(or set JAXEVAL_DISTRIBUTED=1 alone)")
    if num_processes is not None and num_processes < 1:
        raise MeshError(f"environment variable JAXEVAL_NUM_PROCESSES={num_processes} must be at least 1")
    if process_id is not None and not 0 <= process_id < num_processes:
        raise MeshError(f"environment variable JAXEVAL_PROCESS_ID={process_id} must be from 0 to "
                        f"JAXEVAL_NUM_PROCESSES - 1 = {num_processes - 1}")
    if coordinator is not None and (":" not in coordinator or not coordinator.rsplit(":", 1)[1].isdigit()):
        raise MeshError(f"environment variable JAXEVAL_COORDINATOR={coordinator!r} must be host:port")
    return coordinator, num_processes, process_id, auto


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
