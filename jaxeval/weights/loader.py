"""From a model path to parameters: the path resolved (a folder, a GGUF file, a URL or a hub id),
its config read, its weights loaded in whichever checkpoint format it holds (HF safetensors,
a jaxeval Orbax checkpoint, GGUF, GPTQ / AWQ / compressed-tensors / FP8) and held as the load asks
(dense, kept quantized, or rounded at load), its tokenizer, its generation EOS ids and its fingerprint.
jaxeval.api.load_model puts these together into a Model.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import ModelConfig, config_from_hf, load_hf_config
from jaxeval.models.quant import check_quantizable, dequantize_tree, quantize_params
from jaxeval.weights.checkpoint_quant import folder_scheme, load_quantized_linears
from jaxeval.weights.gguf_quantized import LABEL as GGUF_BLOCKS, excluded, quantized_gguf_params
from jaxeval.weights.gguf_weights import GGUFCheckpoint, gguf_file
from jaxeval.weights.hf_weights import load_hf_params
from jaxeval.weights.maxtext_layout import LAYOUTS_TRIED
from jaxeval.weights.orbax import TOKENIZER_CORE_FILES, is_jaxeval_checkpoint, load_checkpoint_params
from jaxeval.weights.quant_sharding import place_params

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def default_dtype() -> str:
    """What dtype="auto" loads: float32 on CPU, bfloat16 on accelerators."""
    return "float32" if jax.default_backend() == "cpu" else "bfloat16"


def read_config(folder: Path, overrides: dict) -> tuple[Path | None, GGUFCheckpoint | None, ModelConfig]:
    """(the GGUF file or None, its reader or None, the config): a llama.cpp checkpoint holds config,
    weights and tokenizer in one file; any other folder has a config.json."""
    gguf = gguf_file(folder)
    if not (gguf or is_jaxeval_checkpoint(folder) or (folder / "config.json").is_file()):
        raise ConfigError(f"{folder / 'config.json'}: no config.json; {folder} is no checkpoint layout jaxeval "
                          f"reads (tried: {'; '.join(LAYOUTS_TRIED)})")
    source = GGUFCheckpoint(gguf) if gguf else None
    config = (config_from_hf(source.config, where=str(gguf), overrides=overrides) if source
              else load_hf_config(folder, overrides))
    return gguf, source, config


def load_params(folder: Path, config: ModelConfig, dtype: str, source, targets, quantize: str | None,
                 quant_group: int, dequantize: bool, mesh=None) -> tuple[dict, str | None]:
    """The parameters, and the label of how their matmul weights are held (Model.quantization).

    quantize: check_quantize's label (rounded at load) or None. A quantized checkpoint's weights
    (GGUF blocks; GPTQ, AWQ, compressed-tensors, FP8 safetensors) stay quantized unless dequantize
    or quantize; a GGUF dequantized takes gguf's own dequantization (the path transformers takes).
    On a mesh (targets: the dense parameters' shardings), dense weights are read straight into their
    shardings; quantized ones are built on the host and then placed (jaxeval.weights.quant_sharding).
    """
    np_dtype = np.dtype(jnp.dtype(DTYPES[dtype]))
    place = jnp.asarray if targets is None else np.asarray  # on a mesh: host arrays until place_params
    if is_jaxeval_checkpoint(folder):
        params = load_checkpoint_params(folder, config, DTYPES[dtype], sharding=None if quantize else targets)
        if not quantize:
            return params, None
        check_quantizable(config, f"{folder}: {quantize}")
        params = _rounded(params, quantize, quant_group, place)
        return (params if targets is None else place_params(params, mesh)), quantize
    scheme = None if source is not None else folder_scheme(folder)  # GPTQ, AWQ, compressed-tensors, FP8
    if scheme is not None or quantize or source is not None:
        check_quantizable(config, f"{folder}: {scheme.method if scheme else quantize or 'GGUF'}")
    if targets is not None and scheme is None and not quantize and (source is None or dequantize):
        return load_hf_params(folder, config, np_dtype, shardings=targets, tensors=source), None
    params, label = _quantized_params(folder, config, np_dtype, source, scheme, quantize, quant_group, dequantize,
                                      place)
    return (params if targets is None else place_params(params, mesh)), label


def _quantized_params(folder, config, np_dtype, source, scheme, quantize, quant_group, dequantize, place):
    """load_params's quantized checkpoints and quantize-on-load, as `place` arrays (device or host)."""
    blocks, label = {}, None
    if scheme is not None:
        blocks, label = load_quantized_linears(folder, config, scheme), scheme.label
        if dequantize or quantize:
            blocks, label = dequantize_tree(blocks, np_dtype), f"{label}-dequantized"
    elif source is not None and not (dequantize or quantize):
        blocks, label = quantized_gguf_params(source, config), GGUF_BLOCKS
    blocks = jax.tree.map(place, blocks)
    params = jax.tree.map(place, load_hf_params(folder, config, np_dtype, tensors=source,
                                                      exclude=frozenset(excluded(blocks) if blocks else ())))
    if blocks:
        params["layers"].update(blocks["layers"])
        params.update({"lm_head": blocks["lm_head"]} if "lm_head" in blocks else {})
    if not quantize:
        return params, label if blocks and excluded(blocks) else None
    return _rounded(params, quantize, quant_group, place), f"{label}+{quantize}" if label else quantize


def _rounded(params: dict, label: str | None, group: int, place=jnp.asarray) -> dict:
    """params with every matmul weight rounded to `label`'s kind (int8, int4-g128, fp8) at load."""
    if not label:
        return params
    return jax.tree.map(place, quantize_params(params, label.split("-")[0], group))


def generation_eos_ids(folder: Path) -> tuple[int, ...]:
    """generation_config.json's eos_token_id (an id or a list of ids; transformers stops at each),
    () when the folder has no such file or field."""
    from jaxeval.io.inputs import read_json

    path = Path(folder) / "generation_config.json"
    if not path.is_file():
        return ()
    raw = read_json(path, ConfigError, "generation config")
    eos = raw.get("eos_token_id") if isinstance(raw, dict) else None
    ids = [eos] if isinstance(eos, int) and not isinstance(eos, bool) else eos if isinstance(eos, list) else []
    if eos is not None and (not ids or any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in ids)):
        raise ConfigError(f"{path}: eos_token_id must be a token id or a list of them, got {eos!r}")
    return tuple(ids)


def resolve_model_path(path: str | Path) -> Path:
    from jaxeval.io.fs import is_url, local_copy

    if is_url(path):  # gs://bucket/model or any fsspec URL: copied once into the local cache
        return local_copy(str(path))
    folder = Path(path)
    if folder.is_dir() or (folder.is_file() and folder.suffix == ".gguf"):
        return folder
    text = str(path)
    if folder.exists() or text.startswith((".", "/", "~")) or text.count("/") != 1:
        raise CheckpointError(f"{path}: not a model folder (expected config.json with safetensors or a jaxeval "
                              "Orbax checkpoint)")
    try:  # a hub id such as "Qwen/Qwen3-0.6B": fetch only what jaxeval reads (never torch weights)
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(text, allow_patterns=["*.json", "*.safetensors", "tokenizer*", "*.jinja",
                                                              "*.txt", "*.model"]))
    except Exception as e:
        raise CheckpointError(f"{path}: not a local folder, and fetching it from the Hugging Face hub failed "
                              f"({type(e).__name__}: {e})") from None


def load_tokenizer_from(folder: Path):
    """The folder's tokenizer through transformers, or None when the folder has no tokenizer files."""
    if not any((folder / name).is_file() for name in TOKENIZER_CORE_FILES):
        return None
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception as e:
        raise CheckpointError(f"{folder}: tokenizer files present but unreadable ({type(e).__name__}: {e})") from None


def fingerprint(folder: Path, dtype: str, gguf: Path | None = None, quantization: str | None = None,
                kv_cache: str | None = None) -> str:
    """Hash of the config, the weights' content (sampled), the dtype, the tokenizer and the chat
    template (jaxeval.fingerprint; the journal names the part that differs), and the quantization
    applied at load and the KV-cache policy, if any. A GGUF file holds all of them: its sampled
    content and the dtype."""
    from jaxeval.fingerprint import model_fingerprint, sampled_digest

    if gguf is not None:
        label = (f"gguf:{sampled_digest(gguf)}:{dtype}" + (f":{quantization}" if quantization else "")
                 + (f":kv={kv_cache}" if kv_cache else ""))
        return hashlib.sha256(label.encode()).hexdigest()[:16]
    return model_fingerprint(folder, dtype, quantization, kv_cache)


def convert(src: str | Path, dst: str | Path, dtype: str | None = None) -> Path:
    """Write a jaxeval Orbax checkpoint from a HF safetensors folder (dtype defaults to the config's)."""
    from jaxeval.weights.orbax import save_checkpoint

    folder = resolve_model_path(src)
    if is_jaxeval_checkpoint(folder):
        raise CheckpointError(f"{src}: already a jaxeval Orbax checkpoint")
    raw = json.loads((folder / "config.json").read_text())
    config = load_hf_config(folder)
    dtype = dtype or {"bfloat16": "bfloat16"}.get(raw.get("torch_dtype") or raw.get("dtype"), "float32")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported (choose {', '.join(DTYPES)})")
    params = load_hf_params(folder, config, np.dtype(jnp.dtype(DTYPES[dtype])))
    save_checkpoint(dst, params, raw, dtype, tokenizer_from=folder)
    return Path(dst)
