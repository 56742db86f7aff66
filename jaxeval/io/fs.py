"""Paths that may be local or any fsspec URL (gs://, s3://, memory://): open, join, write atomically.

gs:// needs gcsfs (`pip install 'jaxeval[gcs]'`); local paths use the plain file system, so
nothing here changes how local runs behave.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from jaxeval.errors import ConfigError


def open_fs(path: str | Path):
    """(filesystem, path inside it) for a local path or an fsspec URL; a clear error when the
    URL's filesystem is not installed (gs:// without gcsfs)."""
    import fsspec.core

    try:
        return fsspec.core.url_to_fs(str(path))
    except (ImportError, ValueError) as e:
        raise ConfigError(f"{path}: cannot open this location ({e}); for gs:// install "
                          f"'jaxeval[gcs]' (gcsfs)") from None


def is_local(fs) -> bool:
    from fsspec.implementations.local import LocalFileSystem

    return isinstance(fs, LocalFileSystem)


def is_url(path: str | Path) -> bool:
    return "://" in str(path) and not str(path).startswith("file://")


def join(base: str | Path, *parts: str) -> str:
    """base/part/... for local paths and URLs alike (URLs always use '/')."""
    if is_url(base):
        return "/".join([str(base).rstrip("/"), *parts])
    return str(Path(base, *parts))


def write_text_atomic(path: str | Path, text: str) -> str:
    """Write text so a reader never sees half of it: temp + fsync + rename locally; one object
    write elsewhere (object stores replace objects atomically). Registered secrets are masked.
    An OSError (a full disk, a file size limit) is one line naming path: the temp file's own
    error names no file."""
    from jaxeval.secrets import redact

    try:
        return _write_text_atomic(path, redact(text))
    except OSError as e:
        raise ConfigError(f"{path}: cannot be written ({e.strerror or type(e).__name__})") from None


def _write_text_atomic(path: str | Path, text: str) -> str:
    fs, inner = open_fs(path)
    if not is_local(fs):
        parent = fs._parent(inner)
        if parent:
            fs.makedirs(parent, exist_ok=True)
        with fs.open(inner, "wb") as f:
            f.write(text.encode("utf-8"))
        return str(path)
    target = Path(inner)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would make results unreadable to others
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return str(target)


def local_copy(url: str, cache_dir: str | Path | None = None) -> Path:
    """A local folder with the contents of a remote model folder (gs://bucket/model), copied once
    into the cache (JAXEVAL_CACHE, default ~/.cache/jaxeval/models) and reused afterwards."""
    fs, inner = open_fs(url)
    if not fs.isdir(inner):
        raise ConfigError(f"{url}: not a folder (a model path must be a folder with config.json)")
    root = Path(cache_dir or os.environ.get("JAXEVAL_CACHE", Path.home() / ".cache" / "jaxeval" / "models"))
    target = root / (hashlib.sha256(url.encode()).hexdigest()[:12] + "-" + inner.rstrip("/").split("/")[-1])
    done = target / ".jaxeval-copied"
    if not done.is_file():
        partial = target.with_name(target.name + ".partial")
        fs.get(inner.rstrip("/") + "/", str(partial), recursive=True)
        if target.exists():
            import shutil

            shutil.rmtree(target)
        os.replace(partial, target)
        done.write_text(url + "\n")
    return target
