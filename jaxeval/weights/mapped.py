"""load_model(path, mapping=...): a model folder whose parameters are another trainer's tree.

The folder holds a Hugging Face style config.json (the model's shape) and the tree, in the mapping's
`checkpoint` subfolder (default: the folder itself): an Orbax PyTree checkpoint (jaxeval.weights.orbax_tree)
or, for the EasyDeL built-in, EasyDeL's own tensorstore layout (jaxeval.weights.easydel_tree). Only the
leaves the mapping reads are restored; the result is placed as load_model places any parameters.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jax
import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.weights.mapping import check_sources, load_mapping, mapped_tree
from jaxeval.weights.param_tree import check_param_tree, flatten


def tree_source(folder: Path, mapping: dict):
    """The reader of the mapped tree inside the model folder."""
    from jaxeval.weights.easydel_tree import is_easydel_tree
    from jaxeval.weights.orbax_tree import OrbaxTree, is_orbax_tree

    where = folder / mapping.get("checkpoint", ".")
    if is_orbax_tree(where):
        return OrbaxTree(where)
    if is_easydel_tree(where):
        from jaxeval.weights.easydel_tree import EasyDeLTree

        return EasyDeLTree(where)
    raise CheckpointError(f"{where}: no parameter tree the mapping can read (looked for an Orbax PyTree "
                          "checkpoint, _METADATA, and an EasyDeL tensorstore checkpoint)")


def load_mapped_params(folder: Path, mapping, config: ModelConfig, np_dtype, targets=None) -> tuple[dict, str]:
    """(jaxeval's parameters read through `mapping` from the tree in `folder`, a digest of the mapping and
    the tree's files for the fingerprint). targets: param_shardings on a mesh, or None (one device)."""
    mapping = load_mapping(mapping)
    source = tree_source(Path(folder), mapping)
    where = str(source.folder)
    check_sources(mapping, config, source.shapes, where)
    params = mapped_tree(mapping, config, source.read, where)
    flat = flatten(params)
    check_param_tree(flat, config, where)
    flat_targets = flatten(targets) if targets is not None else {}
    placed = {p: (jax.device_put(np.asarray(a, np_dtype), flat_targets[p]) if targets is not None
                  else jax.numpy.asarray(np.asarray(a, np_dtype))) for p, a in flat.items()}
    from jaxeval.weights.param_tree import unflatten

    return unflatten(placed), _digest(mapping, source.folder)


def _digest(mapping: dict, folder: Path) -> str:
    from jaxeval.fingerprint import sampled_digest

    h = hashlib.sha256(json.dumps({k: v for k, v in mapping.items() if k != "where"}, sort_keys=True,
                                  default=str).encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f"{path.relative_to(folder)}={sampled_digest(path)};".encode())
    return h.hexdigest()[:16]
