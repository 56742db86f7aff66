"""Compile-only devices of the accelerators `jaxeval compile` targets, from this (CPU-only) machine.

TPU targets come from libtpu's compile-only topologies (jax.experimental.topologies with the
kwargs MaxText's train_compile passes); CUDA targets from the CUDA PJRT plugin's compile-only
topology, given a GPU target description (no CUDA libraries, driver or GPU needed). A program
compiled on these devices is the program a real chip runs: memory_analysis() is the chip's,
and a TPU program too large for the chip's HBM fails to compile with RESOURCE_EXHAUSTED.

Usable HBM per chip is what libtpu's compiler itself reports in its out-of-memory errors
(15.75 GiB on v5e, 95.74 GiB on v5p, 31.25 GiB on v6e; ../../docs/compile.md).
"""

from __future__ import annotations

import dataclasses
import functools
import os

from jaxeval.errors import ConfigError

GIB = 2 ** 30


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    platform: str  # "tpu" or "cuda"
    chips: int
    hbm_bytes: int  # usable per chip
    peak_flops: float  # dense bf16 FLOP/s per chip (jaxeval.plan.hardware)
    clock_hz: float  # TPU: the core clock the fusions' estimated_cycles count (peak / MXU FLOPs per cycle)
    topology: str  # TPU: topology_name; CUDA: "<partitions>x<hosts>x<devices per host>"
    chip_config: str = "default"
    chips_per_host: tuple[int, int, int] = (1, 1, 1)
    slices: int = 1
    gpu: str = ""  # CUDA: the device description key in _GPU_SPECS


# clocks: v5e 197 TF/s over 4 MXUs x 128 x 128 x 2 = 131,072 FLOPs per cycle -> 1.5 GHz;
# v5p 459 TF/s, 4 MXUs per core, 2 cores (megacore) -> 1.75 GHz; v6e 918 TF/s over 4 MXUs of 256 x 256 -> 1.75 GHz
_V5E = dict(platform="tpu", hbm_bytes=int(15.75 * GIB), peak_flops=197e12, clock_hz=1.5e9)
_V5P = dict(platform="tpu", hbm_bytes=int(95.74 * GIB), peak_flops=459e12, clock_hz=1.75e9, chip_config="megacore")
_V6E = dict(platform="tpu", hbm_bytes=int(31.25 * GIB), peak_flops=918e12, clock_hz=1.75e9)
TARGETS = {t.name: t for t in (
    Target("v5e-1", chips=1, topology="v5e:1x1", **_V5E),
    Target("v5e-4", chips=4, topology="v5e:2x2", chips_per_host=(2, 2, 1), **_V5E),
    Target("v5e-8", chips=8, topology="v5e:2x4", chips_per_host=(2, 2, 1), **_V5E),
    Target("2xv5e-8", chips=16, topology="v5e:2x4", chips_per_host=(2, 2, 1), slices=2, **_V5E),
    Target("v5p-8", chips=4, topology="v5:2x2x1", chips_per_host=(2, 2, 1), **_V5P),
    Target("v6e-1", chips=1, topology="v6e:1x1", **_V6E),
    Target("v6e-4", chips=4, topology="v6e:2x2", chips_per_host=(2, 2, 1), **_V6E),
    Target("v6e-8", chips=8, topology="v6e:2x4", chips_per_host=(2, 2, 1), **_V6E),
    Target("h100", platform="cuda", chips=1, hbm_bytes=84929347584, peak_flops=989e12, clock_hz=1.98e9,
           topology="1x1x1", gpu="h100"),
    Target("h100x8", platform="cuda", chips=8, hbm_bytes=84929347584, peak_flops=989e12, clock_hz=1.98e9,
           topology="1x1x8", gpu="h100"),
    Target("h200", platform="cuda", chips=1, hbm_bytes=150754820096, peak_flops=989e12, clock_hz=1.98e9,
           topology="1x1x1", gpu="h200"),
)}

# GpuTargetConfigProto text for the CUDA plugin: SM 9.0 (Hopper); the fields this plugin's proto parses
_GPU_COMMON = """
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132 fpus_per_core: 128
  block_dim_limit_x: 2147483647 block_dim_limit_y: 65535 block_dim_limit_z: 65535
  l2_cache_size: 52428800 clock_rate_ghz: 1.98 shared_memory_per_block_optin: 232448
  cuda_compute_capability { major: 9 } registers_per_core_limit: 65536 registers_per_block_limit: 65536
"""
_GPU_SPECS = {
    "h100": ("NVIDIA H100 80GB HBM3", 84929347584, 3352320000000),
    "h200": ("NVIDIA H200", 150754820096, 4800000000000),
}

TPU_PACKAGE = "libtpu==0.0.42.* (pip install 'jax[tpu]==0.10.2')"
CUDA_PACKAGE = "jax-cuda12-plugin==0.10.2 jax-cuda12-pjrt==0.10.2 (pip install, no CUDA libraries needed)"


def target(name: str) -> Target:
    if name not in TARGETS:
        raise ConfigError(f"compile: unknown target {name!r} (known: {', '.join(TARGETS)})")
    return TARGETS[name]


def _gpu_config(key: str) -> str:
    description, memory, bandwidth = _GPU_SPECS[key]
    return (f"gpu_device_info {{ {_GPU_COMMON} memory_bandwidth: {bandwidth} device_memory_size: {memory} }}\n"
            f'runtime_version {{ major: 12 minor: 8 patch: 0 }}\nplatform_name: "CUDA"\n'
            f'dnn_version_info {{ major: 9 minor: 7 }}\ndevice_description_str: "{description}"\n')


def prepare_environment(host_cpu: bool = True) -> None:
    """Before jax's backends start: the CPU is the host platform (the CUDA plugin would otherwise look
    for a GPU and CUDA libraries, and fail loudly); TPU topologies come from libtpu all the same.
    host_cpu False (`jaxeval run --target`): the run's own devices stay whatever this machine has."""
    if host_cpu:
        os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")
    # libtpu takes /tmp/libtpu_lockfile for the chips; a compile touches none, so two compiles may run at once
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def installed(t: Target) -> bool:
    import importlib.util

    if t.platform == "tpu":
        return importlib.util.find_spec("libtpu") is not None
    try:  # the plugin's kernels and its PJRT library (jax_plugins.xla_cuda12) come in two packages
        return all(importlib.util.find_spec(m) is not None for m in ("jax_cuda12_plugin", "jax_plugins.xla_cuda12"))
    except ModuleNotFoundError:
        return False


def check_installed(t: Target) -> None:
    if not installed(t):
        package = TPU_PACKAGE if t.platform == "tpu" else CUDA_PACKAGE
        raise ConfigError(f"compile: target {t.name} needs {package}")


@functools.lru_cache(maxsize=None)
def devices(name: str) -> tuple:
    """The target's compile-only devices, slice by slice (slice 0's chips first)."""
    from jax.experimental import topologies

    t = target(name)
    check_installed(t)
    if t.platform == "tpu":
        topo = topologies.get_topology_desc(topology_name=t.topology, platform="tpu", chip_config_name=t.chip_config,
                                            chips_per_host_bounds=t.chips_per_host, num_slices=t.slices,
                                            wrap=(False, False, False))
    else:
        _register_cuda()
        topo = topologies.get_topology_desc(t.name, "cuda", target_config=_gpu_config(t.gpu), topology=t.topology)
    found = sorted(topo.devices, key=lambda d: (getattr(d, "slice_index", 0), d.id))
    if len(found) != t.chips:
        raise ConfigError(f"compile: target {name} gave {len(found)} devices, expected {t.chips}")
    return tuple(found)


def _register_cuda() -> None:
    """The CUDA plugin registers with jax only at backend initialisation: make sure it has run."""
    import jax

    jax.devices()  # initialises the backends, the CUDA plugin's compile-only client included
