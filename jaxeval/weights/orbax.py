"""jaxeval's Orbax checkpoint layout, the native format for JAX-trained models.

    FOLDER/config.json      Hugging Face style config (parsed like any HF folder)
    FOLDER/jaxeval.json     {"format": "jaxeval-orbax", "version": 1, "dtype": ...}
    FOLDER/params/          Orbax StandardCheckpointer tree: param_shapes() layout
    FOLDER/tokenizer*       optional tokenizer files (transformers)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.models.param_layout import param_shapes

FORMAT, VERSION = "jaxeval-orbax", 1
# any one of these makes a folder's tokenizer loadable (merges, a chat template or a generation config alone do not)
TOKENIZER_CORE_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                        "vocab.json")
TOKENIZER_FILES = TOKENIZER_CORE_FILES + ("merges.txt", "chat_template.jinja", "generation_config.json")  # copied


def is_jaxeval_checkpoint(folder: Path) -> bool:
    return (folder / "jaxeval.json").is_file()


def save_checkpoint(folder, params: dict, hf_config: dict, dtype: str, tokenizer_from: Path | None = None):
    """Write params (nested dict of arrays) and the HF config into `folder` (replaced if present)."""
    folder = Path(folder).absolute()
    if (folder / "params").exists():
        shutil.rmtree(folder / "params")
    folder.mkdir(parents=True, exist_ok=True)
    with ocp.StandardCheckpointer() as ckpt:
        ckpt.save(folder / "params", params)
    (folder / "config.json").write_text(json.dumps(hf_config, indent=2) + "\n")
    (folder / "jaxeval.json").write_text(json.dumps({"format": FORMAT, "version": VERSION, "dtype": dtype}) + "\n")
    if tokenizer_from is not None and Path(tokenizer_from).resolve() != folder:
        for name in TOKENIZER_FILES:
            if (Path(tokenizer_from) / name).is_file():
                shutil.copy2(Path(tokenizer_from) / name, folder / name)


def load_checkpoint_params(folder, c: ModelConfig, dtype, sharding=None) -> dict:
    """Restore params into the layout config.json implies; a mismatch names the tensor.

    sharding: one Sharding for every array, or a nested dict of them matching param_shapes
    (jaxeval.models.sharding.param_shardings): Orbax then restores each array straight into its
    sharding, every process reading only the chunks its devices hold.
    """
    folder = Path(folder).absolute()
    try:
        meta = json.loads((folder / "jaxeval.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{folder / 'jaxeval.json'}: unreadable ({e})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{folder / 'jaxeval.json'}: expected a JSON object, got {type(meta).__name__}")
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CheckpointError(f"{folder / 'jaxeval.json'}: format {meta.get('format')!r} version "
                              f"{meta.get('version')!r}, expected {FORMAT!r} version {VERSION}")
    try:
        if not isinstance(meta.get("dtype"), str):
            raise TypeError
        stored_dtype = np.dtype(meta["dtype"])
    except TypeError:
        raise CheckpointError(f"{folder / 'jaxeval.json'}: field 'dtype'={meta.get('dtype')!r} "
                              "is not a dtype") from None
    if not (folder / "params").is_dir():
        raise CheckpointError(f"{folder}: no params/ folder (Orbax checkpoint)")
    with ocp.StandardCheckpointer() as ckpt:
        try:
            stored = ckpt.metadata(folder / "params")
            stored = getattr(stored, "item_metadata", stored)
            flat_stored = {jax.tree_util.keystr(k): v for k, v in jax.tree_util.tree_leaves_with_path(stored)}
            if not flat_stored:  # Orbax returns no metadata (only logs a warning) when it cannot read it
                raise CheckpointError(f"{folder / 'params'}: no readable Orbax checkpoint metadata "
                                      "(the checkpoint is incomplete or corrupt)")
            expected = _abstract(param_shapes(c), stored_dtype, sharding)
            wanted = {jax.tree_util.keystr(k) for k, _ in jax.tree_util.tree_leaves_with_path(expected)}
            extra = sorted(set(flat_stored) - wanted)
            if extra:
                raise CheckpointError(f"{folder / 'params'}: tensor {extra[0]} is stored but config.json implies "
                                      "no such parameter")
            for key, want in jax.tree_util.tree_leaves_with_path(expected):
                got = flat_stored.get(jax.tree_util.keystr(key))
                if got is None:
                    raise CheckpointError(f"{folder / 'params'}: tensor {jax.tree_util.keystr(key)} is missing")
                if tuple(got.shape) != want.shape:
                    raise CheckpointError(f"{folder / 'params'}: tensor {jax.tree_util.keystr(key)} has shape "
                                          f"{list(got.shape)}, config.json implies {list(want.shape)}")
            params = ckpt.restore(folder / "params", expected)
        except CheckpointError:
            raise
        except Exception as e:  # Orbax/TensorStore raise many types for corrupt data
            raise CheckpointError(f"{folder / 'params'}: cannot restore Orbax checkpoint ({type(e).__name__}: {e})") from None
    return jax.tree.map(lambda a: a.astype(dtype), params)


def _abstract(shapes: dict, dtype, sharding) -> dict:
    """ShapeDtypeStructs for a nested dict of shapes; sharding: one for all, or a matching nested dict."""
    out = {}
    for name, shape in shapes.items():
        target = sharding.get(name) if isinstance(sharding, dict) else sharding
        out[name] = (_abstract(shape, dtype, target) if isinstance(shape, dict)
                     else jax.ShapeDtypeStruct(shape, dtype, sharding=target))
    return out
