"""What a model folder is, as a few content hashes: the journal and the run name key results on it.

model_identity(folder, dtype) -> {"config", "weights", "dtype", "tokenizer", "chat_template"}, each
a short hash; model_fingerprint() folds them into one (Model.fingerprint). Two folders with the
same name but other weights, a checkpoint overwritten by more training, a chat template added to
a folder: each gives another identity, so another run name, and a journal of one is never
resumed by the other (jaxeval.run.journal names the part that differs).

The weights are hashed cheaply but by content: every weight file's name and size, the whole of
files up to WHOLE_FILE_BYTES, and for larger ones their first MiB (the safetensors header with
every tensor's name, dtype, shape and offsets), their last MiB and SAMPLES evenly spaced blocks
in between, so that a model changed by training (which moves every tensor) always differs.
Modification times are deliberately left out: a model copied to a fresh TPU VM's cache after a
preemption must resume its journal. A change confined to bytes between the samples of a large
file (one small tensor edited by hand) is the one thing this does not see.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from jaxeval.io.inputs import open_input, read_bytes, read_json

WHOLE_FILE_BYTES = 8 << 20
EDGE_BYTES = 1 << 20
SAMPLES, SAMPLE_BYTES = 64, 64 << 10
CONFIG_FILES = ("config.json", "generation_config.json", "jaxeval.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
                   "vocab.json", "merges.txt", "added_tokens.json")
CHAT_TEMPLATE_FILES = ("chat_template.jinja", "chat_template.json")
PARTS = {  # identity part -> how a refusal names it
    "config": "the model's config.json / generation_config.json",
    "weights": "the model's weights (checkpoint files' content)",
    "dtype": "the dtype",
    "tokenizer": "the tokenizer files",
    "chat_template": "the chat template",
    "quantization": "the quantization applied at load",
    "kv_cache": "the KV-cache policy",
}

_known: dict[str, dict] = {}  # fingerprint -> its parts, for journals of models loaded in this process


def _digest(h) -> str:
    return h.hexdigest()[:16]


def _hash_files(folder: Path, names) -> str | None:
    h, found = hashlib.sha256(), False
    for name in names:
        path = folder / name
        if path.is_file():
            found = True
            data = read_bytes(path)
            if name == "tokenizer_config.json":  # its chat_template belongs to the chat-template part
                config = read_json(path)
                config.pop("chat_template", None) if isinstance(config, dict) else None
                data = json.dumps(config, sort_keys=True).encode()
            h.update(f"{name}:{len(data)}:".encode() + data)
    return _digest(h) if found else None


def chat_template_digest(folder: Path) -> str | None:
    """A hash of the folder's chat template (its own file or tokenizer_config.json's), None without one."""
    h, found = hashlib.sha256(), False
    for name in CHAT_TEMPLATE_FILES:
        if (folder / name).is_file():
            found = True
            h.update(name.encode() + read_bytes(folder / name))
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        config = read_json(config_path)
        template = config.get("chat_template") if isinstance(config, dict) else None
        if template:
            found = True
            h.update(json.dumps(template, sort_keys=True).encode())
    return _digest(h) if found else None


def weight_files(folder: Path) -> list[Path]:
    """HF safetensors (and their index) and an Orbax checkpoint's params/ tree, sorted."""
    files = list(folder.glob("*.safetensors")) + list(folder.glob("*.safetensors.index.json"))
    if (folder / "params").is_dir():
        files += [f for f in (folder / "params").rglob("*") if f.is_file()]
    return sorted(files)


def sampled_digest(path: Path) -> str:
    """Size plus the whole file (small ones) or its edges and SAMPLES evenly spaced blocks."""
    size = path.stat().st_size
    h = hashlib.sha256(f"{size}:".encode())
    with open_input(path) as f:
        if size <= WHOLE_FILE_BYTES:
            h.update(f.read())
            return _digest(h)
        span = size - 2 * EDGE_BYTES - SAMPLE_BYTES
        offsets = [0, size - EDGE_BYTES] + [EDGE_BYTES + span * i // (SAMPLES - 1) for i in range(SAMPLES)]
        for offset in offsets:
            f.seek(offset)
            h.update(f.read(EDGE_BYTES if offset in (0, size - EDGE_BYTES) else SAMPLE_BYTES))
    return _digest(h)


def model_identity(folder: str | Path, dtype: str, quantization: str | None = None,
                   kv_cache: str | None = None) -> dict:
    folder = Path(folder)
    weights = hashlib.sha256()
    for path in weight_files(folder):
        weights.update(f"{path.relative_to(folder)}={sampled_digest(path)};".encode())
    parts = {"config": _hash_files(folder, CONFIG_FILES), "weights": _digest(weights), "dtype": dtype,
             "tokenizer": _hash_files(folder, TOKENIZER_FILES), "chat_template": chat_template_digest(folder)}
    if quantization:  # only when quantized at load, so that unquantized fingerprints stay as they were
        parts["quantization"] = quantization
    if kv_cache:  # a KV-cache policy's label (jaxeval.models.kv_policy); the exact cache adds nothing
        parts["kv_cache"] = kv_cache
    return parts


def model_fingerprint(folder: str | Path, dtype: str, quantization: str | None = None,
                      kv_cache: str | None = None) -> str:
    """One 16-hex hash of model_identity(); its parts stay known to identity_parts()."""
    parts = model_identity(folder, dtype, quantization, kv_cache)
    fingerprint = _digest(hashlib.sha256(json.dumps(parts, sort_keys=True).encode()))
    _known[fingerprint] = parts
    return fingerprint


def identity_parts(model) -> dict:
    """The parts of a loaded model's fingerprint ({"fingerprint": ...} for a model built elsewhere)."""
    return dict(_known.get(model.fingerprint) or {"fingerprint": model.fingerprint})


def describe_difference(stored: dict, current: dict) -> str:
    """'the model's weights (...) and the chat template' for the parts that differ."""
    names = [PARTS.get(part, part) for part in sorted(set(stored) | set(current))
             if stored.get(part) != current.get(part)]
    return " and ".join(names) or "nothing"
