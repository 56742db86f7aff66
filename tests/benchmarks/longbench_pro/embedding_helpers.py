"""A tiny random Qwen3 embedding model in the sentence-transformers 3.x folder layout of
Qwen3-Embedding (modules.json, 1_Pooling last-token, 2_Normalize, sentence_bert_config.json,
config_sentence_transformers.json with the query/document prompts). Needs torch.

The tokenizer is the embedded model's, without its chat template: newer sentence-transformers
render texts through a chat template when the tokenizer has one, which 3.1.0 (the official
evaluator's) never does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

TINY_TOKENIZER = Path(__file__).resolve().parents[3] / "jaxeval" / "assets" / "tiny_llama"
QUERY_PROMPT = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def build_tiny_qwen3_embedding(folder: Path, seed: int = 0, max_seq_length: int = 48) -> Path:
    import torch
    from transformers import Qwen3Config, Qwen3Model

    torch.manual_seed(seed)
    config = Qwen3Config(vocab_size=4096, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=512,
                         rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False)
    model = Qwen3Model(config).eval()
    with torch.no_grad():  # random norm weights too, so a misplaced norm cannot pass
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.uniform_(0.5, 1.5)
    model.save_pretrained(folder)
    shutil.copy(TINY_TOKENIZER / "tokenizer.json", folder / "tokenizer.json")
    tokenizer_config = json.loads((TINY_TOKENIZER / "tokenizer_config.json").read_text())
    tokenizer_config.pop("chat_template", None)
    _write(folder / "tokenizer_config.json", tokenizer_config)
    _write(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])
    _write(folder / "1_Pooling" / "config.json", {
        "word_embedding_dimension": 64, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
        "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": True, "include_prompt": True})
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write(folder / "sentence_bert_config.json", {"max_seq_length": max_seq_length, "do_lower_case": False})
    _write(folder / "config_sentence_transformers.json", {
        "prompts": {"query": QUERY_PROMPT, "document": ""}, "default_prompt_name": None,
        "similarity_fn_name": "cosine"})
    return folder
