"""A MaxText checkpoint as jaxeval loads it: the checkpoint, its config source, its tokenizer.

The model's shape comes from, in order: `maxtext_config` (MaxText's command-line overrides, or a run's
YAML, jaxeval.weights.maxtext_config), `config` (a Hugging Face config.json or a folder holding one),
or a config.json next to the checkpoint (in the step folder or the run folder). Everything is checked
(config keys, tree, every leaf's shape) before any array is read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import ModelConfig, config_from_hf
from jaxeval.io.fs import is_url
from jaxeval.weights import maxtext_config as mc
from jaxeval.weights.maxtext_layout import MaxTextTree, items_folder, read_tree
from jaxeval.weights.loader import load_tokenizer_from
from jaxeval.weights.maxtext_params import check_maxtext_params


@dataclasses.dataclass(frozen=True)
class MaxTextCheckpoint:
    tree: MaxTextTree
    config: ModelConfig
    style: mc.MaxTextStyle
    raw_config: dict  # the Hugging Face style config dict the model was built from
    tokenizer: str | None  # tokenizer_path, the config folder, or None
    scan_layers: bool | None  # what the config said, if anything (checked against the tree)


def is_maxtext(path) -> bool:
    return items_folder(path) is not None


def _hf_config_file(config) -> Path:
    path = Path(config)
    return path / "config.json" if path.is_dir() else path


def _config_beside(items: str) -> Path | None:
    """A config.json in the step folder, or in the run folder two levels above (<run>/checkpoints/<step>)."""
    if is_url(items):
        return None
    step = Path(items).parent
    for folder in (step, step.parent, step.parent.parent):
        if (folder / "config.json").is_file():
            return folder / "config.json"
    return None


def open_maxtext(path, maxtext_config=None, config=None, overrides: dict | None = None) -> MaxTextCheckpoint:
    """The checkpoint at `path` with its config, checked; raises one line on the first problem."""
    from jaxeval.io.inputs import read_json

    items = items_folder(path)
    if items is None:
        raise CheckpointError(f"{path}: not a MaxText checkpoint (no items/_METADATA)")
    tokenizer = None
    scan_layers = None
    if maxtext_config is not None:
        given = mc.parse_maxtext_args(maxtext_config)
        merged = mc.resolve(given)
        raw, style = mc.hf_config(merged), mc.style_of(merged)
        tokenizer = merged.get("tokenizer_path") or None
        scan_layers = given.get("scan_layers")  # when given (MaxText's default, True, is not imposed: the tree says)
        where = "maxtext_config"
    else:
        file = _hf_config_file(config) if config is not None else _config_beside(items)
        if file is None:
            raise ConfigError(f"{path}: a MaxText checkpoint stores no model config; give maxtext_config="
                              "'model_name=... [overrides]' (or a run's YAML), or config=PATH/config.json")
        if not file.is_file():
            raise ConfigError(f"config={config}: no such file")
        raw = read_json(file, ConfigError, "config")
        if not isinstance(raw, dict):
            raise ConfigError(f"{file}: expected a JSON object")
        where = str(file)
        style = mc.style_from_hf(raw, where)
        raw = mc.as_maxtext_model(raw, style)
        tokenizer = str(file.parent)
    model_config = config_from_hf(raw, where=where, overrides=overrides)
    tree = read_tree(items)
    if scan_layers is not None and bool(scan_layers) != tree.scanned:
        raise ConfigError(f"{where}: scan_layers={scan_layers} but {items} holds "
                          f"{'scanned' if tree.scanned else 'unscanned'} layers")
    check_maxtext_params(tree, model_config, style)
    return MaxTextCheckpoint(tree, model_config, style, raw, tokenizer, scan_layers)


def maxtext_fingerprint(ckpt: MaxTextCheckpoint, dtype: str, kv_cache: str | None = None) -> str:
    """Hash of the config the model was built from, the checkpoint's Orbax metadata (its tree, shapes and
    the step's manifest), the dtype and the KV-cache policy: a new step or another config is another model."""
    import hashlib
    import json

    import fsspec

    h = hashlib.sha256(json.dumps(ckpt.raw_config, sort_keys=True, default=str).encode())
    for name in ("_METADATA", "manifest.ocdbt"):
        try:
            with fsspec.open(f"{ckpt.tree.items}/{name}", "rb") as f:
                h.update(f.read())
        except FileNotFoundError:
            pass
    h.update(f"{ckpt.tree.items}:{dtype}:{kv_cache}".encode())
    return h.hexdigest()[:16]


def maxtext_checkpoint_of(options, overrides: dict | None = None):
    """The MaxText checkpoint options.model names (options: jaxeval.options.model.ModelOptions), opened with its
    maxtext_config / model_config (its config and tree checked, no array read); None when it is no MaxText
    checkpoint. overrides: the config.json fields to replace (default: options.config_overrides)."""
    if not is_maxtext(options.model):
        return None
    return open_maxtext(options.model, options.maxtext_config, options.model_config,
                        options.config_overrides if overrides is None else overrides)


def maxtext_model_info(options, overrides: dict | None = None):
    """(ModelConfig, tokenizer) of options.model (a ModelOptions) when it is a MaxText checkpoint, from its
    maxtext_config / model_config / tokenizer (validate and plan check them without reading an array); None
    otherwise."""
    ckpt = maxtext_checkpoint_of(options, overrides)
    if ckpt is None:
        return None
    return ckpt.config, load_maxtext_tokenizer(ckpt.tokenizer, options.tokenizer)


def load_maxtext_tokenizer(source: str | None, given: str | None):
    """A MaxText checkpoint's tokenizer: `given` (--tokenizer), else its config's tokenizer_path or config folder
    (a folder of tokenizer files, or what transformers' AutoTokenizer takes); None when there is neither."""
    where = given or source
    if where is None:
        return None
    if Path(where).is_dir():
        tokenizer = load_tokenizer_from(Path(where))
        if tokenizer is None and given:
            raise CheckpointError(f"--tokenizer {given}: no tokenizer files in this folder")
        return tokenizer
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(where)
    except Exception as e:
        raise CheckpointError(f"tokenizer {where}: unreadable ({type(e).__name__}: {e})") from None
