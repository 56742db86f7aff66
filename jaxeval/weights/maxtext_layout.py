"""Finding a MaxText checkpoint and its parameter tree (Orbax metadata only: no array is read here).

MaxText writes Orbax PyTree checkpoints (OCDBT + zarr3): a training run's `<run>/checkpoints/<step>/items`
(`step`, `params/params/<module tree>`, `opt_state`, `nnx_aux`), its converters' parameter-only
checkpoints (the same tree with an empty `opt_state`), `generate_param_only_checkpoint`'s NNX tree
(`decoder/...`, `token_embedder/...`, every leaf under `value`), and post-training's `base/...`.
Only the parameter subtree is ever restored (jaxeval.weights.maxtext_params): the optimizer state
is named in the metadata and never read.
"""

from __future__ import annotations

import dataclasses
import os

import jax

from jaxeval.errors import CheckpointError
from jaxeval.io.fs import is_url, open_fs

LAYOUTS_TRIED = ("Hugging Face folder (config.json + *.safetensors)", "jaxeval Orbax checkpoint (jaxeval.json)",
                 "GGUF file", "MaxText checkpoint (<step>/items or an items folder: Orbax _METADATA)")
# Where MaxText's writers put the parameters, tried in order (maxtext/utils/model_creation_utils.py
# from_pretrained and checkpointing.load_params_from_path look in these places).
_ROOTS = (("params", "params"), (), ("base",), ("model_params",), ("model",))


def _exists(path: str) -> bool:
    if not is_url(path):
        return os.path.exists(path)
    fs, inner = open_fs(path)  # gs:// needs gcsfs (jaxeval[gcs]); Orbax then reads through TensorStore
    return fs.exists(inner)


def items_folder(path) -> str | None:
    """The Orbax items folder of a MaxText checkpoint at `path` (a step folder or the items folder
    itself; local or a gs:// / fsspec URL), or None when `path` is not one."""
    path = str(path).rstrip("/")
    if not is_url(path):
        path = os.path.abspath(path)  # Orbax needs absolute paths (a relative one reads no metadata)
    for candidate in (f"{path}/items", path):
        if _exists(f"{candidate}/_METADATA"):
            return candidate
    return None


@dataclasses.dataclass(frozen=True)
class MaxTextTree:
    """A MaxText checkpoint's parameter leaves, keyed by their path below the parameter root."""

    items: str
    root: tuple[str, ...]  # ("params", "params"), () (NNX param-only), ("base",), ...
    leaves: dict  # "decoder/layers/self_attention/query/kernel" -> Orbax metadata (shape, dtype)
    value_leaves: bool  # NNX trees hold every array under a trailing "value" key
    meta_tree: dict  # the whole metadata tree (restores name their subtree of it)
    aux: dict = dataclasses.field(default_factory=dict)  # "nnx_aux/model/..." -> metadata: NNX variables kept
    # beside the parameters (a training state's MoEBiasVar: DeepSeek's routed gate bias, layer axis 0 when scanned)

    @property
    def scanned(self) -> bool:
        return any(k.startswith(("decoder/layers/", "decoder/moe_layers/", "decoder/dense_layers/")) for k in self.leaves)


def _key(k) -> str:
    return str(getattr(k, "key", getattr(k, "idx", k)))


def read_tree(items: str) -> MaxTextTree:
    """The parameter tree of the checkpoint in `items`; one line when it has none."""
    import orbax.checkpoint as ocp

    try:
        meta = ocp.PyTreeCheckpointer().metadata(items)
    except Exception as e:  # Orbax/TensorStore raise many types for unreadable metadata
        raise CheckpointError(f"{items}: unreadable Orbax metadata ({type(e).__name__}: {e})") from None
    tree = getattr(meta, "item_metadata", meta)
    tree = getattr(tree, "tree", tree)
    if not isinstance(tree, dict) or not tree:
        raise CheckpointError(f"{items}: Orbax metadata holds no tree (an incomplete or corrupt checkpoint)")
    for root in _ROOTS:
        node = tree
        for k in root:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and "decoder" in node and "token_embedder" in node:
            flat = {"/".join(_key(k) for k in path): v
                    for path, v in jax.tree_util.tree_leaves_with_path(node)}
            value_leaves = all(k.endswith("/value") for k in flat)
            if value_leaves:
                flat = {k[: -len("/value")]: v for k, v in flat.items()}
            model_aux = tree.get("nnx_aux", {}).get("model") if isinstance(tree.get("nnx_aux"), dict) else None
            aux = {"nnx_aux/model/" + "/".join(_key(k) for k in path): v
                   for path, v in jax.tree_util.tree_leaves_with_path(model_aux or {})}
            return MaxTextTree(items, root, flat, value_leaves, tree, aux)
    top = sorted(tree)
    if "opt_state" in tree or "step" in tree:
        raise CheckpointError(f"{items}: a MaxText training-state checkpoint without parameters (its tree holds "
                              f"{', '.join(top)}; no params/params/decoder or token_embedder)")
    raise CheckpointError(f"{items}: an Orbax checkpoint but no MaxText parameter tree (top-level keys "
                          f"{', '.join(top)}; looked for decoder + token_embedder under "
                          f"{', '.join('/'.join(r) or '(root)' for r in _ROOTS)})")
