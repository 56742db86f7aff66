"""A parameter tree held against the layout a config implies (jaxeval.models.param_layout.param_shapes):
flattened to "layers/wq"-style paths, and checked so that a tree from outside (a training loop's live
arrays, a mapped checkpoint) fails with one line naming the path, the expected and the found shape."""

from __future__ import annotations

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.models.param_layout import param_shapes


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"layers": {"wq": a}} -> {"layers/wq": a} (leaves kept as they are)."""
    flat = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{path}/"))
        else:
            flat[path] = value
    return flat


def unflatten(flat: dict) -> dict:
    """The inverse of flatten."""
    tree: dict = {}
    for path, value in flat.items():
        *parents, leaf = path.split("/")
        node = tree
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    return tree


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """path -> shape of every parameter the config implies."""
    return {path: tuple(shape) for path, shape in flatten(param_shapes(config)).items()}


def check_param_tree(flat: dict, config: ModelConfig, where: str, origin=lambda path: path) -> None:
    """Raise one CheckpointError for the first parameter that is missing, unexpected or mis-shaped.

    flat: path -> array (or anything with .shape); origin(path): how the message names the path's
    source (a mapping gives the checkpoint's own path beside ours)."""
    want = expected_shapes(config)
    for path, shape in want.items():
        if path not in flat:
            raise CheckpointError(f"{where}: parameter {origin(path)} is missing (expected shape {list(shape)})")
        found = tuple(getattr(flat[path], "shape", ()))
        if found != shape:
            raise CheckpointError(f"{where}: parameter {origin(path)} has shape {list(found)}, "
                                  f"expected {list(shape)}")
    extra = sorted(set(flat) - set(want))
    if extra:
        raise CheckpointError(f"{where}: {extra[0]} (shape {list(getattr(flat[extra[0]], 'shape', ()))}) is no "
                              f"parameter of this config (expected shapes: none; the model has "
                              f"{len(want)} parameters)")
