"""Local paths and fsspec URLs alike: atomic writes, joins, and model folders copied from a URL."""

from __future__ import annotations

import os
import stat

import fsspec
import pytest

from jaxeval.weights.loader import fingerprint
from jaxeval.cli import EMBEDDED_MODEL
from jaxeval.errors import ConfigError
from jaxeval.io.fs import join, local_copy, write_text_atomic
from jaxeval.io.inputs import read_text


def test_atomic_write_local_leaves_no_temp_and_readable_mode(tmp_path):
    path = tmp_path / "sub" / "r.json"
    write_text_atomic(path, "one\n")
    write_text_atomic(path, "two\n")
    assert path.read_text() == "two\n" and os.listdir(path.parent) == ["r.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_atomic_write_and_read_on_memory_filesystem():
    url = join("memory://storage-test/a", "b.json")
    assert url == "memory://storage-test/a/b.json"
    write_text_atomic(url, "{}\n")
    assert read_text(url) == "{}\n"
    fsspec.filesystem("memory").rm("/storage-test", recursive=True)


def test_unknown_protocol_is_a_clear_error():
    with pytest.raises(ConfigError, match="nosuchfs://x/y.json: cannot open this location .Protocol not known"):
        write_text_atomic("nosuchfs://x/y.json", "")


def test_model_folder_from_a_url_is_copied_once_and_loads(tmp_path, monkeypatch):
    from jaxeval import cli

    fs = fsspec.filesystem("memory")
    fs.put(str(EMBEDDED_MODEL) + "/", "/models/tiny_llama", recursive=True)
    first = local_copy("memory://models/tiny_llama", cache_dir=tmp_path)
    assert (first / "config.json").is_file() and (first / ".jaxeval-copied").is_file()
    (first / "marker").write_text("kept")
    assert local_copy("memory://models/tiny_llama", cache_dir=tmp_path) == first  # reused, not copied again
    assert (first / "marker").is_file()
    monkeypatch.setenv("JAXEVAL_CACHE", str(tmp_path))
    args = cli.build_parser().parse_args(["run", "--model", "memory://models/tiny_llama", "--dtype", "float32"])
    assert cli._load(cli.run_flags(args).model).fingerprint == fingerprint(EMBEDDED_MODEL, "float32")  # the same weights
    with pytest.raises(ConfigError, match="not a folder"):
        local_copy("memory://models/tiny_llama/config.json", cache_dir=tmp_path)
    fs.rm("/models", recursive=True)
