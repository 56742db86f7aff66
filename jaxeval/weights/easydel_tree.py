"""EasyDeL's save_pretrained folder read as a flat tree (EasyDeL 0.3.0, eformer's tensorstore checkpointer).

    FOLDER/config.json               transformers-style config plus EasyDeL's runtime fields
    FOLDER/tensorstore_index.json    {"format": "tensorstore", "prefixes": {"model": [{"path", "shape", "dtype"}]}}
    FOLDER/model/<tree path>/        one zarr (v2) array per parameter, in the chunks its shards had

Its Trainer's run-<step>/ folders hold the same files and the optimizer state beside them; only the
arrays under the "model" prefix are listed here, and only those a mapping asks for are read.
Paths are given without the prefix: "model/layers/0/self_attn/q_proj/kernel", "lm_head/kernel".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxeval.errors import CheckpointError

INDEX = "tensorstore_index.json"
PREFIX = "model"


def is_easydel_tree(folder: Path) -> bool:
    return (Path(folder) / INDEX).is_file()


class EasyDeLTree:
    """.shapes (path -> shape) from the index, .read(paths) -> numpy arrays through tensorstore."""

    def __init__(self, folder: Path):
        self.folder = Path(folder).absolute()
        index_path = self.folder / INDEX
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            entries = index["prefixes"][PREFIX]
            self._files = {e["path"][len(PREFIX) + 1:]: e["path"] for e in entries}
            self.shapes = {e["path"][len(PREFIX) + 1:]: tuple(int(n) for n in e["shape"]) for e in entries}
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as e:
            raise CheckpointError(f"{index_path}: not an EasyDeL tensorstore index ({type(e).__name__}: {e})") from None
        if not self.shapes:
            raise CheckpointError(f"{index_path}: lists no arrays under the {PREFIX!r} prefix")

    def read(self, paths) -> dict[str, np.ndarray]:
        import tensorstore as ts

        out = {}
        for path in paths:
            where = self.folder / self._files[path]
            try:
                store = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": str(where)}},
                                open=True, read=True).result()
                out[path] = np.asarray(store.read().result())
            except Exception as e:  # tensorstore raises ValueError and its own types for damaged data
                raise CheckpointError(f"{where}: cannot read this array ({type(e).__name__}: {e})") from None
            if out[path].shape != self.shapes[path]:
                raise CheckpointError(f"{where}: has shape {list(out[path].shape)}, the index says "
                                      f"{list(self.shapes[path])}")
        return out
