"""Declarative mappings: another JAX trainer's parameter tree onto jaxeval's layout, without code.

A mapping is a YAML or JSON file (or a dict, or a built-in's name: jaxeval.weights.builtin_mappings):

    format: jaxeval-mapping
    version: 1
    checkpoint: params            # where the tree is, inside the model folder (default: the folder itself)
    ignore: ["opt_state/*"]       # source leaves read by no parameter and not an error (fnmatch patterns)
    unused_rules: error           # or ignore: rules for parameters the config lacks drop out (one mapping
                                  # for several families), their sources left unread
    params:                       # jaxeval parameter path (jaxeval.models.param_layout) -> its source
      embed:       {from: tok_embed/embedding}
      final_norm:  {from: norm/scale}
      lm_head:     {from: head/kernel}
      layers/wq:   {from: "blocks/{layer}/attn/qkv/kernel", split: {axis: -1, sizes: [heads*head_dim,
                    kv_heads*head_dim, kv_heads*head_dim], index: 0}}
      layers/wo:   {from: "blocks/{layer}/attn/out/kernel", transpose: [1, 0]}

Each source path uses "/" between tree keys. "{layer}" makes it one tensor per layer, stacked in
layer order; without it the source is already stacked, its layer axis `stacked_axis` (default 0).
On one layer's tensor (or the whole tensor of a top-level parameter), in this order:
  transpose: a permutation of its axes;
  split: {axis, index, sizes: [...]} takes part `index` of a fused tensor cut along `axis` into those
         sizes, or {axis, index, parts: N, interleaved: true} every N-th slice from `index`;
         a size may be a product of config sizes (embed, heads, kv_heads, head_dim, mlp, vocab, ...);
  reshape: implied: the result is reshaped to jaxeval's shape, which must hold the same elements;
  scale: a number multiplied in (undo a scale folded into the weights); offset: a number added
         (a norm stored as 1 + w read by a family that adds none).
Every mistake is one error naming the path, the expected and the found shape: a parameter with no
source, a source missing from the checkpoint, a source leaf no parameter reads, a shape that disagrees.
"""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path

import numpy as np

from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import ModelConfig
from jaxeval.models.param_layout import axis_sizes
from jaxeval.weights.param_tree import expected_shapes, unflatten

FORMAT, VERSION = "jaxeval-mapping", 1
RULE_KEYS = {"from", "transpose", "split", "scale", "offset", "stacked_axis"}
MAPPING_KEYS = {"format", "version", "checkpoint", "ignore", "params", "unused_rules"}


def load_mapping(mapping) -> dict:
    """A mapping from a dict, a YAML / JSON file, or a built-in's name; checked for its form (not yet
    against a config)."""
    from jaxeval.weights.builtin_mappings import BUILTIN

    where = "mapping"
    if isinstance(mapping, (str, Path)) and str(mapping) in BUILTIN:
        where, mapping = f"built-in mapping {str(mapping)!r}", BUILTIN[str(mapping)]
    elif isinstance(mapping, (str, Path)):
        where = str(mapping)
        path = Path(mapping)
        if not path.is_file():
            raise ConfigError(f"mapping {mapping}: neither a file nor a built-in mapping "
                              f"(built-ins: {', '.join(sorted(BUILTIN))})")
        from jaxeval.io.inputs import read_text

        text = read_text(path, ConfigError, "mapping file")
        try:
            import yaml

            mapping = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
        except (ValueError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'} "
                              f"({' '.join(str(e).split())})") from None
    if not isinstance(mapping, dict):
        raise ConfigError(f"{where}: a mapping is an object with 'params', got {type(mapping).__name__}")
    mapping = {k: (dict(v) if isinstance(v, dict) else v) for k, v in mapping.items() if k != "where"}
    if mapping.get("format", FORMAT) != FORMAT or mapping.get("version", VERSION) != VERSION:
        raise ConfigError(f"{where}: format {mapping.get('format')!r} version {mapping.get('version')!r}, expected "
                          f"{FORMAT!r} version {VERSION}")
    unknown = set(mapping) - MAPPING_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} (known: {', '.join(sorted(MAPPING_KEYS))})")
    if mapping.get("unused_rules", "error") not in ("error", "ignore"):
        raise ConfigError(f"{where}: unused_rules must be error or ignore, got {mapping['unused_rules']!r}")
    params = mapping.get("params")
    if not isinstance(params, dict) or not params:
        raise ConfigError(f"{where}: 'params' must be a non-empty object (jaxeval path -> source rule)")
    for ours, rule in params.items():
        rule = {"from": rule} if isinstance(rule, str) else rule
        if not isinstance(rule, dict) or not isinstance(rule.get("from"), str):
            raise ConfigError(f"{where}: params.{ours} needs 'from': the source path")
        unknown = set(rule) - RULE_KEYS
        if unknown:
            raise ConfigError(f"{where}: params.{ours}: unknown key {sorted(unknown)[0]!r} "
                              f"(known: {', '.join(sorted(RULE_KEYS))})")
        params[ours] = rule
    ignore = mapping.get("ignore", [])
    if not isinstance(ignore, list) or not all(isinstance(p, str) for p in ignore):
        raise ConfigError(f"{where}: 'ignore' must be a list of path patterns")
    return {**mapping, "params": params, "ignore": ignore, "where": where}


def unused_sources(mapping: dict, config: ModelConfig) -> list[str]:
    """Source patterns of the rules for parameters this config lacks (with unused_rules: ignore): such a
    leaf, if the checkpoint holds it, is left unread (a tied model's saved head)."""
    if mapping.get("unused_rules") != "ignore":
        return []
    want = expected_shapes(config)
    return [rule["from"].replace("{layer}", "*") for ours, rule in mapping["params"].items() if ours not in want]


def source_paths(mapping: dict, config: ModelConfig) -> dict[str, list[str]]:
    """jaxeval path -> the source paths it reads (one per layer for a "{layer}" rule); every jaxeval
    parameter of the config needs a rule."""
    want = expected_shapes(config)
    for ours in mapping["params"]:
        if ours not in want and mapping.get("unused_rules") != "ignore":
            raise CheckpointError(f"{mapping['where']}: params.{ours} is no parameter of this config "
                                  f"(its parameters: {', '.join(want)})")
    out = {}
    for ours, shape in want.items():
        rule = mapping["params"].get(ours)
        if rule is None:
            raise CheckpointError(f"{mapping['where']}: parameter {ours} (expected shape {list(shape)}) is "
                                  "unmapped: no rule in 'params' reads it")
        source = rule["from"]
        out[ours] = [source.format(layer=i) for i in range(shape[0])] if "{layer}" in source else [source]
    return out


def check_sources(mapping: dict, config: ModelConfig, found: dict[str, tuple], where: str) -> None:
    """Every source a rule names exists; every source leaf is read or ignored (found: path -> shape)."""
    wanted = source_paths(mapping, config)
    used = {p for paths in wanted.values() for p in paths}
    for ours, paths in wanted.items():
        for path in paths:
            if path not in found:
                raise CheckpointError(f"{where}: {path} (read for {ours}, expected shape "
                                      f"{list(expected_shapes(config)[ours])}) is missing from the checkpoint")
    ignored = mapping["ignore"] + unused_sources(mapping, config)
    for path, shape in found.items():
        if path not in used and not any(fnmatch.fnmatchcase(path, p) for p in ignored):
            raise CheckpointError(f"{where}: {path} (shape {list(shape)}) is unmapped: no parameter reads it "
                                  "and 'ignore' does not name it")


def apply_mapping(mapping: dict, tree, config: ModelConfig, where: str) -> dict:
    """A source tree (nested dicts of arrays) -> jaxeval's parameter tree (nested dict of numpy arrays,
    or of jax arrays when the source holds them: the transforms then run on the devices)."""
    from jaxeval.weights.param_tree import flatten

    flat = flatten(_plain(tree))
    check_sources(mapping, config, {p: tuple(np.shape(a)) for p, a in flat.items()}, where)
    return mapped_tree(mapping, config, lambda paths: {p: flat[p] for p in paths}, where)


def mapped_tree(mapping: dict, config: ModelConfig, read, where: str) -> dict:
    """jaxeval's parameter tree, each parameter built from read(its source paths) -> {path: array}."""
    sizes, want = axis_sizes(config), expected_shapes(config)
    out = {}
    for ours, paths in source_paths(mapping, config).items():
        rule, shape = mapping["params"][ours], want[ours]
        arrays = read(paths)
        if len(paths) > 1:  # one tensor per layer
            parts = [_transformed(arrays[p], rule, shape[1:], sizes, f"{where}: {p} (for {ours})") for p in paths]
            out[ours] = _stack(parts)
        elif ours.split("/")[0].endswith("layers"):  # stacked already
            whole = arrays[paths[0]]
            axis = int(rule.get("stacked_axis", 0))
            label = f"{where}: {paths[0]} (for {ours})"
            if np.ndim(whole) <= axis or np.shape(whole)[axis] != shape[0]:
                raise CheckpointError(f"{label}: has shape {list(np.shape(whole))}, expected {shape[0]} layers on "
                                      f"axis {axis} (jaxeval shape {list(shape)})")
            xp = _xp(whole)
            whole = xp.moveaxis(whole, axis, 0)
            out[ours] = _stack([_transformed(whole[i], rule, shape[1:], sizes, label) for i in range(shape[0])])
        else:
            out[ours] = _transformed(arrays[paths[0]], rule, shape, sizes, f"{where}: {paths[0]} (for {ours})")
    return unflatten(out)


def _plain(tree):
    """Nested dicts of arrays from nested dicts, lists or an nnx.State (lists keyed by their index)."""
    try:
        from flax import nnx

        if isinstance(tree, nnx.State):
            tree = nnx.to_pure_dict(tree)
    except ImportError:
        pass
    if isinstance(tree, dict):
        return {str(k): _plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return {str(i): _plain(v) for i, v in enumerate(tree)}
    return tree


def _xp(a):
    return np if isinstance(a, np.ndarray) else __import__("jax.numpy", fromlist=["numpy"])


def _stack(parts):
    return _xp(parts[0]).stack(parts)


def _size(term, sizes: dict[str, int], label: str) -> int:
    if isinstance(term, int) and not isinstance(term, bool):
        return term
    try:
        return math.prod(int(f) if f.strip().isdigit() else sizes[f.strip()] for f in str(term).split("*"))
    except KeyError as e:
        raise ConfigError(f"{label}: split size {term!r} names {e.args[0]!r}, not a config size "
                          f"({', '.join(sorted(sizes))})") from None


def _transformed(a, rule: dict, shape: tuple, sizes: dict, label: str):
    """One tensor through the rule's transpose, split, implied reshape, scale and offset."""
    xp = _xp(a)
    if "transpose" in rule:
        perm = list(rule["transpose"])
        if sorted(perm) != list(range(np.ndim(a))):
            raise CheckpointError(f"{label}: has shape {list(np.shape(a))}; transpose {perm} is not a permutation "
                                  f"of its {np.ndim(a)} axes (expected shape {list(shape)})")
        a = xp.transpose(a, perm)
    if "split" in rule:
        a = _split(a, rule["split"], sizes, label, shape)
    if math.prod(np.shape(a)) != math.prod(shape):
        raise CheckpointError(f"{label}: has shape {list(np.shape(a))}, expected {list(shape)} "
                              f"({math.prod(shape)} elements)")
    a = xp.reshape(a, shape)
    if "scale" in rule:
        a = a * xp.asarray(rule["scale"], dtype=a.dtype)
    if "offset" in rule:
        a = a + xp.asarray(rule["offset"], dtype=a.dtype)
    return a


def _split(a, split: dict, sizes: dict, label: str, shape: tuple):
    if not isinstance(split, dict) or "axis" not in split or "index" not in split:
        raise ConfigError(f"{label}: split needs axis, index and sizes (or parts with interleaved: true)")
    axis, index = int(split["axis"]), int(split["index"])
    length = np.shape(a)[axis]
    if split.get("interleaved"):
        parts = int(split["parts"])
        if length % parts:
            raise CheckpointError(f"{label}: has shape {list(np.shape(a))}; axis {axis} does not split into "
                                  f"{parts} interleaved parts (expected shape {list(shape)})")
        return _xp(a).take(a, np.arange(index, length, parts), axis=axis)
    cuts = [_size(t, sizes, label) for t in split["sizes"]]
    if sum(cuts) != length:
        raise CheckpointError(f"{label}: has shape {list(np.shape(a))}; axis {axis} is {length} long, the split "
                              f"sizes {cuts} add to {sum(cuts)} (expected shape {list(shape)})")
    start = sum(cuts[:index])
    return _xp(a).take(a, np.arange(start, start + cuts[index]), axis=axis)
