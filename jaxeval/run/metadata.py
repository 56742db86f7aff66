"""Run metadata recorded in every results file: what ran, on what, with which versions."""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
import subprocess
from pathlib import Path

_PACKAGES = ("jaxeval", "jax", "jaxlib", "flax", "orbax-checkpoint", "numpy", "transformers", "tokenizers")


def package_versions() -> dict[str, str | None]:
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["python"] = platform.python_version()
    return versions


def git_sha() -> str | None:
    """The commit of the jaxeval source tree, when it is a git checkout (None for an installed wheel)."""
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def model_info(model) -> dict:
    mesh = getattr(model, "mesh", None)
    return {"path": str(model.path), "model_type": model.config.model_type, "dtype": model.dtype,
            "fingerprint": model.fingerprint, "attention": model.attention,
            "mesh": None if mesh is None else {str(k): int(v) for k, v in mesh.shape.items()},
            "prefill_chunk": getattr(model, "prefill_chunk", None),
            "config_overrides": getattr(model, "config_overrides", {}),
            "quantization": getattr(model, "quantization", None), "kv_cache": getattr(model, "kv_cache", None),
            "param_bytes": _param_bytes(model)}


def _param_bytes(model) -> int | None:
    """Bytes the weights hold on the devices (quantized codes and scales as stored)."""
    from jaxeval.models.quant import param_bytes

    params = getattr(model, "_params", None)
    return None if params is None else param_bytes(params)


def device_info() -> dict:
    import jax

    return {"platform": jax.default_backend(), "count": jax.device_count(),
            "kind": jax.devices()[0].device_kind, "processes": jax.process_count()}


def run_metadata(model, wall_time_s: float) -> dict:
    return {
        "model": model_info(model),
        "devices": device_info(),
        "versions": package_versions(),
        "git_sha": git_sha(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": round(wall_time_s, 3),
        "tokens_read": model.stats["tokens"],
        "sequences_read": model.stats["reads"],
    }
