"""Peaks of the named accelerators and the detected device, and the measured calibrations.

Figures are per chip, dense bfloat16 matmul FLOP/s and HBM bytes/s from the vendors' data
sheets; the MFU (and the memory-bandwidth utilisation of decode steps) applied to them is stated
in every plan.
"""

from __future__ import annotations

import time

from jaxeval.errors import ConfigError

ACCELERATORS = {  # name -> (peak FLOP/s, HBM bytes, HBM bytes/s, device_kind prefixes)
    "v5e": (197e12, 16 * 2 ** 30, 819e9, ("TPU v5 lite", "TPU v5e")),
    "v5p": (459e12, 95 * 2 ** 30, 2765e9, ("TPU v5p", "TPU v5")),
    "v6e": (918e12, 32 * 2 ** 30, 1640e9, ("TPU v6 lite", "TPU v6e")),
    "h100": (989e12, 80 * 2 ** 30, 3350e9, ("NVIDIA H100",)),
    "h200": (989e12, 141 * 2 ** 30, 4800e9, ("NVIDIA H200",)),
}
DEFAULT_MFU = 0.4  # of the peak, for reads and prefill
DEFAULT_MBU = 0.6  # of the HBM bandwidth, for decode steps (weights and KV read once per step)


def named(name: str) -> str:
    if name not in ACCELERATORS:
        raise ConfigError(f"--accelerator {name!r}: choose {', '.join(ACCELERATORS)}")
    return name


def detected() -> tuple[str, str | None]:
    """(the first device's kind, the named accelerator it is, or None)."""
    import jax

    kind = jax.devices()[0].device_kind
    for name, (*_, prefixes) in ACCELERATORS.items():
        if any(kind.startswith(p) for p in prefixes):
            return kind, name
    return kind, None


def device_memory_bytes() -> int | None:
    """The first device's memory (bytes_limit), None where the platform does not say (CPU)."""
    import jax

    device = jax.local_devices()[0]  # memory_stats() is refused for another process's device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return int(stats["bytes_limit"]) if stats and "bytes_limit" in stats else None


def measure_matmul(n: int, repeats: int) -> dict:
    """Best achieved FLOP/s of an n x n float32 matmul (the machine's practical matmul peak; also
    `jaxeval plan`'s calibration)."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    product = jax.jit(lambda x, y: x @ y)
    product(a, b).block_until_ready()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        product(a, b).block_until_ready()
        times.append(time.perf_counter() - t0)
    return {"n": n, "flops": 2.0 * n ** 3, "best_s": min(times), "flops_per_s": 2.0 * n ** 3 / min(times)}


def matmul_peak(n: int = 1024, repeats: int = 3) -> float:
    """The device's best n x n float32 matmul FLOP/s (jaxeval bench's calibration), measured once per
    machine and kept in JAXEVAL_CACHE (~/.cache/jaxeval)/calibration.json: measured on every call,
    the same plan moved 3x with the load of a shared CPU. Delete the file to measure again."""
    import json
    import os
    from pathlib import Path

    import jax

    device = jax.devices()[0]
    key = f"{device.platform}|{device.device_kind}|{os.cpu_count()}|jax {jax.__version__}|{n}"
    file = Path(os.environ.get("JAXEVAL_CACHE", Path.home() / ".cache" / "jaxeval")) / "calibration.json"
    try:
        cached = json.loads(file.read_text())
    except (OSError, ValueError):
        cached = {}
    if not isinstance(cached, dict):
        cached = {}
    if isinstance(cached.get(key), (int, float)) and cached[key] > 0:
        return float(cached[key])
    peak = measure_matmul(n, repeats)["flops_per_s"]
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps({**cached, key: peak}, indent=1) + "\n")
    except OSError:
        pass  # a read-only home: measured again next time, nothing else lost
    return peak


def measure_model(model, read_tokens: int, prompt_tokens: int = 64, new_tokens: int = 8) -> dict:
    """A few jitted reads and one short generation of the loaded model itself: the read's first
    (compiling) and second call, and the seconds per decode step."""
    import numpy as np

    before = dict(model.stats)  # the calibration is not the run's work
    rng = np.random.RandomState(0)
    ids = rng.randint(3, model.config.vocab_size, size=read_tokens + 1).astype(np.int32)
    positions, tokens = np.array([read_tokens]), ids[[read_tokens]]
    times = []
    for _ in range(3):
        started = time.perf_counter()
        np.asarray(model.read(ids, positions, tokens).logprobs)
        times.append(time.perf_counter() - started)
    prompt = ids[:prompt_tokens].tolist()
    gen = []
    for _ in range(2):
        started = time.perf_counter()
        model.generate([prompt], new_tokens, batch_size=1)
        gen.append(time.perf_counter() - started)
    model.stats.update(before)
    return {"read_tokens": read_tokens, "read_first_s": times[0], "read_s": min(times[1:]),
            "generate_first_s": gen[0], "decode_step_s": gen[1] / new_tokens}
