"""The sentence-transformers settings of a decoder embedding folder (Qwen3-Embedding).

What sentence-transformers does for such a model folder, and jaxeval.embedding reproduces:
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
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from jaxeval.errors import CheckpointError, ConfigError

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
