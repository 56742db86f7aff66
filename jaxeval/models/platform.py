"""The platform a program is traced for: jax.default_backend(), unless a compile for another target
says otherwise (jaxeval.aot compiles TPU and GPU programs on a CPU-only machine, whose default
backend is the CPU). Code that picks an implementation per platform asks traced_platform(), so that
the program compiled for a target is the one a run on that target executes: splash lowers as Mosaic
(not Pallas interpret mode) and a mixture of experts runs its grouped matmul (jax.lax.ragged_dot),
not the CPU's blocked loop."""

from __future__ import annotations

import contextlib
import contextvars

import jax

_TARGET_PLATFORM = contextvars.ContextVar("jaxeval_target_platform", default=None)


@contextlib.contextmanager
def target_platform(platform: str):
    """Trace for `platform` ("tpu", "gpu", "cpu") inside the block, whatever this process's backend."""
    token = _TARGET_PLATFORM.set(platform)
    try:
        yield
    finally:
        _TARGET_PLATFORM.reset(token)


def traced_platform() -> str:
    return _TARGET_PLATFORM.get() or jax.default_backend()
