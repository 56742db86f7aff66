"""Sentence embeddings from a decoder (Qwen3-Embedding), computed with jaxeval's own decoder.

What sentence-transformers does for such a model folder, reproduced:
- modules.json: Transformer -> Pooling -> (Normalize); only last-token pooling is supported
  (Qwen3-Embedding's), any other pooling mode is refused;
- sentence_bert_config.json: max_seq_length (inputs truncated to it, special tokens included;
  newer folders keep it as the tokenizer's model_max_length) and do_lower_case;
- config_sentence_transformers.json: named prompts ("query", "document") and the default
  prompt name; a prompt is prepended to the text as a plain string;
- each text is stripped, then tokenised with the folder's tokenizer and its post-processor
  (Qwen3-Embedding's appends <|endoftext|>), truncation "longest_first";
- the embedding is the final-norm hidden state of the last real token, L2-normalised
  (eps 1e-12, as torch.nn.functional.normalize).
Texts are right-padded into length buckets: attention is causal, so padding after a text never
changes the hidden state of its last token (sentence-transformers pads on the left; RoPE is
relative, so its shifted positions give the same numbers up to float rounding).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.buckets import count_bucket
from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import ModelConfig, load_hf_config
from jaxeval.models.decoder import embed_tokens, rms_norm, run_layers
from jaxeval.models.hf_weights import load_hf_params

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
# module types end in these class names (sentence-transformers 3.x: "sentence_transformers.models.Pooling";
# 5.x and later: "sentence_transformers.sentence_transformer.modules.pooling.Pooling")
POOLING, NORMALIZE, TRANSFORMER = ".Pooling", ".Normalize", ".Transformer"


@dataclasses.dataclass(frozen=True)
class SentenceConfig:
    """The sentence-transformers settings of a model folder."""

    max_seq_length: int | None
    do_lower_case: bool
    normalize: bool
    prompts: dict[str, str]
    default_prompt_name: str | None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: unreadable sentence-transformers config ({error})") from None


def read_sentence_config(folder: Path) -> SentenceConfig:
    """Parse modules.json and friends; a folder without modules.json is refused."""
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        raise CheckpointError(f"{folder}: no modules.json (not a sentence-transformers model folder)")
    modules = _read_json(modules_file)
    types = [str(module.get("type")) for module in modules]
    pooling = [module for module in modules if str(module.get("type")).endswith(POOLING)]
    if len(pooling) != 1:
        raise CheckpointError(f"{modules_file}: expected one Pooling module, found {len(pooling)}")
    pooling_config = _read_json(folder / pooling[0].get("path", "") / "config.json")
    modes = sorted(key for key, value in pooling_config.items() if key.startswith("pooling_mode_") and value)
    if "pooling_mode" in pooling_config:  # newer layout: one string
        modes = ["pooling_mode_" + str(pooling_config["pooling_mode"])]
    if modes != ["pooling_mode_lasttoken"]:
        raise ConfigError(f"{folder}: pooling {modes} is not supported by the JAX embedding path "
                          "(only last-token pooling, as Qwen3-Embedding)")
    unknown = [t for t in types if not t.endswith((POOLING, NORMALIZE, TRANSFORMER))]
    if unknown:
        raise ConfigError(f"{modules_file}: modules {unknown} are not supported by the JAX embedding path")
    bert = _read_json(folder / "sentence_bert_config.json") if (folder / "sentence_bert_config.json").is_file() else {}
    st = (_read_json(folder / "config_sentence_transformers.json")
          if (folder / "config_sentence_transformers.json").is_file() else {})
    return SentenceConfig(max_seq_length=bert.get("max_seq_length"), do_lower_case=bool(bert.get("do_lower_case")),
                          normalize=any(t.endswith(NORMALIZE) for t in types), prompts=dict(st.get("prompts") or {}),
                          default_prompt_name=st.get("default_prompt_name"))


@functools.partial(jax.jit, static_argnames=("config",))
def _last_token_states(params, ids, lengths, *, config: ModelConfig):
    """ids int [B, T] right-padded; lengths int [B] -> float32 [B, D] final-norm state at lengths - 1."""
    x = embed_tokens(params, config, ids)
    x, _ = run_layers(params, config, x, jnp.arange(ids.shape[1]), backend="xla")
    last = jnp.take_along_axis(x, (lengths - 1)[:, None, None], axis=1)[:, 0]
    return rms_norm(last, params["final_norm"], config.rms_norm_eps, config.norm_plus_one).astype(jnp.float32)


class DecoderEmbedder:
    """Embed texts with a Qwen3-Embedding-style folder (safetensors + tokenizer + ST configs)."""

    def __init__(self, folder: str | Path, dtype: str = "float32", batch_size: int = 8):
        from transformers import AutoTokenizer

        if dtype not in DTYPES:
            raise ConfigError(f"embedding dtype {dtype!r} is not supported (choose {', '.join(DTYPES)})")
        self.folder, self.dtype, self.batch_size = Path(folder), dtype, batch_size
        self.sentence = read_sentence_config(self.folder)
        config = load_hf_config(self.folder)
        # an embedding checkpoint has no LM head; the head is never used here
        self.config = dataclasses.replace(config, tie_word_embeddings=True)
        params = load_hf_params(self.folder, self.config, np.dtype(jnp.dtype(DTYPES[dtype])))
        self.params = jax.tree.map(jnp.asarray, params)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder))

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
        encoded = [self.token_ids(prefix + text) for text in texts]
        out = np.zeros((len(texts), self.config.hidden_size), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            width = count_bucket(max(len(encoded[i]) for i in rows), minimum=16)
            ids = np.zeros((len(rows), width), np.int32)
            for r, i in enumerate(rows):
                ids[r, :len(encoded[i])] = encoded[i]
            lengths = np.array([len(encoded[i]) for i in rows], np.int32)
            states = np.asarray(_last_token_states(self.params, jnp.asarray(ids), jnp.asarray(lengths),
                                                   config=self.config))
            out[rows] = states
        if self.sentence.normalize:
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out
