"""Sentence embeddings from a decoder embedding folder (Qwen3-Embedding), on jaxeval's own model and engine.

The folder loads as any model does (jaxeval.api.load_model: one dtype table, the mesh, the
attention backends), without an LM head; the folder's sentence-transformers settings
(jaxeval.models.sentence_config) say how texts become token ids, and the embedding of a text is
the final-norm hidden state of its last token (jaxeval.engine.states), L2-normalised when the
folder has a Normalize module.

Each text is read alone: attention is causal, so nothing after a text could change its last
state anyway (sentence-transformers pads a batch on the left; RoPE is relative, so its shifted
positions give the same numbers up to float rounding).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from jaxeval.api import load_model
from jaxeval.errors import ConfigError
from jaxeval.models.sentence_config import read_sentence_config


class DecoderEmbedder:
    """Embed texts with a Qwen3-Embedding-style folder (safetensors + tokenizer + sentence-transformers configs)."""

    def __init__(self, folder: str | Path, dtype: str = "float32", *, attention: str = "chunked", mesh=None):
        self.folder = Path(folder)
        self.sentence = read_sentence_config(self.folder)
        self.model = load_model(self.folder, dtype, attention=attention, mesh=mesh, lm_head=False)
        if self.model.tokenizer is None:
            raise ConfigError(f"{self.folder}: no tokenizer files (an embedding folder needs its tokenizer)")
        self.dtype, self.tokenizer = self.model.dtype, self.model.tokenizer

    @property
    def config(self):
        return self.model.config

    def prompt_text(self, prompt_name: str | None = None, prompt: str | None = None) -> str:
        """The string prepended to each text, chosen as sentence-transformers' encode() chooses it."""
        if prompt is not None:
            return prompt
        name = prompt_name if prompt_name is not None else self.sentence.default_prompt_name
        if name is None:
            return ""
        if name not in self.sentence.prompts:
            raise ConfigError(f"{self.folder}: prompt name {name!r} not in config_sentence_transformers.json "
                              f"(has {', '.join(self.sentence.prompts) or 'none'})")
        return self.sentence.prompts[name]

    def token_ids(self, text: str) -> list[int]:
        text = text.strip()
        if self.sentence.do_lower_case:
            text = text.lower()
        ids = list(self.tokenizer(text, truncation="longest_first",
                                  max_length=self.sentence.max_seq_length)["input_ids"])
        if not ids:
            raise ConfigError(f"{self.folder}: text {text[:40]!r} tokenises to nothing")
        return ids

    def encode(self, texts: Sequence[str], prompt_name: str | None = None, prompt: str | None = None) -> np.ndarray:
        """float32 [N, D] embeddings, L2-normalised when the folder has a Normalize module."""
        prefix = self.prompt_text(prompt_name, prompt)
        out = np.zeros((len(texts), self.config.hidden_size), np.float32)
        for i, text in enumerate(texts):
            ids = self.token_ids(prefix + text)
            out[i] = self.model.final_states(ids, [len(ids) - 1])[0]
        if self.sentence.normalize:
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
