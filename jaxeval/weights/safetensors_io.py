"""Read Hugging Face safetensors without PyTorch: the header is JSON, the tensors are memory-mapped.

Reading through np.memmap means a tensor's bytes are touched only when it is used, so a
process can take just the slice it needs (the engine's sharded loading builds on this).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np

from jaxeval.errors import CheckpointError

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
           "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2}


def read_header(file: Path) -> tuple[dict, int]:
    """-> (header without __metadata__, byte offset where tensor data starts)."""
    try:
        with open(file, "rb") as f:
            raw_len = f.read(8)
            if len(raw_len) < 8:
                raise CheckpointError(f"{file}: truncated safetensors file (no header)")
            (n,) = struct.unpack("<Q", raw_len)
            if n > 100_000_000:
                raise CheckpointError(f"{file}: not a safetensors file (header length {n})")
            raw = f.read(n)
            if len(raw) < n:
                raise CheckpointError(f"{file}: truncated safetensors file (header of {n} bytes, "
                                      f"only {len(raw)} present)")
            header = json.loads(raw)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{file}: cannot read safetensors header ({e})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{file}: not a safetensors file (header is not a JSON object)")
    header.pop("__metadata__", None)
    for name, meta in header.items():
        if not (isinstance(meta, dict) and isinstance(meta.get("dtype"), str)
                and isinstance(meta.get("shape"), list) and all(_is_count(d) for d in meta["shape"])
                and isinstance(meta.get("data_offsets"), list) and len(meta["data_offsets"]) == 2
                and all(_is_count(o) for o in meta["data_offsets"])
                and meta["data_offsets"][0] <= meta["data_offsets"][1]):
            raise CheckpointError(f"{file}: tensor {name!r} has a malformed header entry {meta!r}")
    return header, 8 + n


def _is_count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


class SafetensorsFolder:
    """Tensors of a model folder by name: model.safetensors or shards listed in the index."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        index = self.folder / "model.safetensors.index.json"
        single = self.folder / "model.safetensors"
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
            except (OSError, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError) as e:
                raise CheckpointError(f"{index}: malformed index ({e!r})") from None
            if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
                raise CheckpointError(f"{index}: malformed index ('weight_map' must map tensor names to file names)")
            files = sorted(set(weight_map.values()))
        elif single.is_file():
            files = ["model.safetensors"]
        else:
            raise CheckpointError(f"{self.folder}: no model.safetensors or model.safetensors.index.json")
        self._entries: dict[str, tuple[Path, dict, int]] = {}
        for name in files:
            file = self.folder / name
            if not file.is_file():
                raise CheckpointError(f"{file}: shard listed in the index is missing")
            header, data_start = read_header(file)
            size = file.stat().st_size
            for tensor, meta in header.items():
                end = data_start + meta["data_offsets"][1]
                if end > size:
                    raise CheckpointError(f"{file}: tensor {tensor!r} ends at byte {end}, past the file end ({size})")
                self._entries[tensor] = (file, meta, data_start)

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def get(self, name: str) -> np.ndarray:
        """The tensor as a (memory-mapped, read-only) numpy array."""
        if name not in self._entries:
            raise CheckpointError(f"{self.folder}: tensor {name!r} is missing from the safetensors files")
        file, meta, data_start = self._entries[name]
        if meta["dtype"] not in _DTYPES:
            raise CheckpointError(f"{file}: tensor {name!r} has unsupported dtype {meta['dtype']}")
        begin, end = meta["data_offsets"]
        dtype = np.dtype(_DTYPES[meta["dtype"]])
        count = (end - begin) // dtype.itemsize
        if count != int(np.prod(meta["shape"], dtype=np.int64)):
            raise CheckpointError(f"{file}: tensor {name!r} has {count} elements for shape {meta['shape']}")
        data = np.memmap(file, dtype=dtype, mode="r", offset=data_start + begin, shape=(count,))
        return data.reshape(meta["shape"])
