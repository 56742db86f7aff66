"""Any Orbax PyTree checkpoint read as a flat tree: its leaves' paths and shapes from the metadata, and
only the leaves asked for restored (partial restore: an optimizer state beside the parameters is never
materialised). The paths are the tree's keys joined by "/", list and tuple entries by their index."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import orbax.checkpoint as ocp

from jaxeval.errors import CheckpointError


def _key(entry) -> str:
    for attribute in ("key", "idx", "name"):
        if hasattr(entry, attribute):
            return str(getattr(entry, attribute))
    return str(entry)


def path_of(keys) -> str:
    return "/".join(_key(k) for k in keys)


def is_orbax_tree(folder: Path) -> bool:
    """An Orbax PyTree checkpoint folder: its _METADATA file (or the older _sharding / checkpoint files)."""
    return any((folder / name).is_file() for name in ("_METADATA", "_sharding", "checkpoint"))


class OrbaxTree:
    """The leaves of the Orbax checkpoint at `folder`: .shapes (path -> shape), .read(paths) -> numpy arrays."""

    def __init__(self, folder: Path):
        self.folder = Path(folder).absolute()
        if not self.folder.is_dir() or not is_orbax_tree(self.folder):
            raise CheckpointError(f"{self.folder}: not an Orbax checkpoint (no _METADATA)")
        self._checkpointer = ocp.PyTreeCheckpointer()
        try:
            meta = self._checkpointer.metadata(self.folder)
        except Exception as e:  # Orbax raises many types for a damaged checkpoint
            raise CheckpointError(f"{self.folder}: cannot read Orbax metadata ({type(e).__name__}: {e})") from None
        self.tree = getattr(meta, "item_metadata", meta)
        self.tree = getattr(self.tree, "tree", self.tree)
        leaves = jax.tree_util.tree_flatten_with_path(self.tree)[0]
        self.shapes = {path_of(keys): tuple(getattr(leaf, "shape", ()) or ()) for keys, leaf in leaves}
        if not self.shapes:
            raise CheckpointError(f"{self.folder}: the Orbax checkpoint holds no arrays")

    def read(self, paths) -> dict[str, np.ndarray]:
        """The named leaves as numpy arrays; no other leaf is read."""
        wanted = set(paths)
        skeleton = jax.tree_util.tree_map_with_path(
            lambda keys, leaf: ocp.RestoreArgs(restore_type=np.ndarray) if path_of(keys) in wanted else None,
            self.tree)
        pruned = _prune(skeleton)
        try:
            restored = self._checkpointer.restore(self.folder, args=ocp.args.PyTreeRestore(
                item=jax.tree.map(lambda _: 0, pruned, is_leaf=lambda x: isinstance(x, ocp.RestoreArgs)),
                restore_args=pruned, partial_restore=True))
        except Exception as e:
            raise CheckpointError(f"{self.folder}: cannot restore ({type(e).__name__}: {e})") from None
        flat = {path_of(keys): np.asarray(leaf) for keys, leaf in jax.tree_util.tree_flatten_with_path(restored)[0]}
        return {p: flat[p] for p in paths}


def _prune(tree):
    """The tree without its None leaves (and without containers left empty)."""
    if isinstance(tree, dict):
        kept = {k: _prune(v) for k, v in tree.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {} and v != []}
    if isinstance(tree, (list, tuple)):
        kept = [_prune(v) for v in tree]
        return kept if any(v is not None for v in kept) else None
    return tree
