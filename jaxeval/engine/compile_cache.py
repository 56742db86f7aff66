"""The persistent XLA compilation cache, on by default: a second run of the same shapes skips compiling.

Where: $JAXEVAL_COMPILE_CACHE if set, else ~/.cache/jaxeval/xla. JAXEVAL_COMPILE_CACHE=off (or 0,
false, none) turns it off. A directory the user already gave JAX (jax_compilation_cache_dir,
JAX_COMPILATION_CACHE_DIR) is kept. JAX decides once per process, at its first compilation,
whether the cache is used, so this must run before anything compiles (load_model does it first).
Compilations shorter than jax_persistent_cache_min_compile_time_secs (default 1 s) are not stored.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "JAXEVAL_COMPILE_CACHE"
_OFF = ("off", "0", "false", "none", "no")


def compile_cache_dir() -> Path | None:
    """The directory jaxeval asks JAX to cache compiled programs in, or None when turned off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        return None
    return Path(value).expanduser() if value else Path.home() / ".cache" / "jaxeval" / "xla"


def enable_compile_cache() -> str | None:
    """Point JAX's persistent compilation cache at compile_cache_dir() unless the user set one or
    turned it off; -> the directory in use (None: no persistent cache)."""
    import jax

    current = jax.config.jax_compilation_cache_dir
    if current:
        return current
    folder = compile_cache_dir()
    if folder is None:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache rather than fail the run
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    return str(folder)
