"""SemSim for T4: max cosine similarity between the embedded prediction and references.

Officially: Qwen/Qwen3-Embedding-8B through sentence-transformers (padding side left, no
prompt), the three references encoded as one batch and the prediction alone, float32, then
`model.similarity` (plain cosine, float32), max over references.

Backends:
- "jax" (default): jaxeval.embedding.DecoderEmbedder, jaxeval's own Qwen3 decoder with
  sentence-transformers' pooling, normalisation and prompt handling (no PyTorch needed);
- "sentence-transformers": the package itself (`pip install 'jaxeval[semsim]'`), for any
  sentence-transformers folder, including a small stand-in model.
The model is looked up locally only (a folder, or the Hugging Face cache): nothing is
downloaded at run time. Any model other than Qwen3-Embedding-8B is recorded as a deviation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

import numpy as np

from jaxeval.errors import ConfigError

OFFICIAL_EMBEDDING_MODEL = "Qwen/Qwen3-Embedding-8B"
BACKENDS = ("jax", "sentence-transformers")


class EmbeddingSimilarity:
    """metrics.SemanticSimilarity over an embedder with encode(texts) -> float32 [N, D]."""

    def __init__(self, embedder, description: dict):
        self.embedder = embedder
        self.description = description

    def max_similarity(self, references: Sequence[str], prediction: str) -> float:
        refs = np.asarray(self.embedder.encode(list(references)), np.float32)
        pred = np.asarray(self.embedder.encode([prediction]), np.float32)
        return float(cosine_matrix(refs, pred).max())


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 cosine similarities [len(a), len(b)], as sentence-transformers' cos_sim."""
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), np.float32(1e-12))
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), np.float32(1e-12))
    return (a @ b.T).astype(np.float32)


class SentenceTransformersEmbedder:
    def __init__(self, folder: str | Path, device: str = "cpu"):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ConfigError("the sentence-transformers SemSim backend needs: pip install 'jaxeval[semsim]'") from None
        self.model = SentenceTransformer(str(folder), device=device, tokenizer_kwargs={"padding_side": "left"})

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), convert_to_numpy=True), np.float32)


def local_model_folder(name: str | Path) -> Path | None:
    """A local folder for `name`: the path itself, or the hub id's snapshot in the HF cache."""
    path = Path(name)
    if path.is_dir():
        return path
    if str(name).count("/") != 1 or path.exists():
        return None
    try:
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(str(name), local_files_only=True))
    except Exception:
        return None


@dataclasses.dataclass(frozen=True)
class SemSimSettings:
    model: str = OFFICIAL_EMBEDDING_MODEL
    backend: str = "jax"
    dtype: str = "float32"

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ConfigError(f"unknown SemSim backend {self.backend!r}; available: {', '.join(BACKENDS)}")


def load_semsim(settings: SemSimSettings) -> tuple[EmbeddingSimilarity | None, dict]:
    """The similarity (None when the model is not available locally) and what to record about it."""
    folder = local_model_folder(settings.model)
    description = {"model": settings.model, "backend": settings.backend, "dtype": settings.dtype,
                   "folder": str(folder) if folder else None}
    if folder is None:
        description["deviation"] = (f"embedding model {settings.model!r} not found locally: T4 samples fail "
                                    "(score 0, counted in fail_samples_num)")
        return None, description
    if settings.model != OFFICIAL_EMBEDDING_MODEL:
        description["deviation"] = (f"SemSim uses {settings.model!r}, not {OFFICIAL_EMBEDDING_MODEL}: "
                                    "T4 scores are not comparable with the official ones")
    elif settings.dtype != "float32":
        description["deviation"] = f"SemSim embeddings in {settings.dtype} (official: float32)"
    if settings.backend == "jax":
        from jaxeval.embedding import DecoderEmbedder
        embedder = DecoderEmbedder(folder, dtype=settings.dtype)
    else:
        embedder = SentenceTransformersEmbedder(folder)
    return EmbeddingSimilarity(embedder, description), description
