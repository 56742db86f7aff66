"""Named model shapes for `jaxeval bench` and their random-weight HF folders (the FLOPs a read needs: jaxeval.plan.flops).

A named shape is written once as a Hugging Face safetensors folder (numpy only, fixed seed, no
torch), so jaxeval and transformers load the very same weights. The tokenizer is the embedded
tiny model's (4,096 ids), so the agent bench's rules configs can run on any shape whose
vocabulary holds it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from jaxeval.errors import ConfigError

EMBEDDED_MODEL = Path(__file__).resolve().parents[1] / "assets" / "tiny_llama"
_LLAMA = dict(architectures=["LlamaForCausalLM"], model_type="llama", rms_norm_eps=1e-5, hidden_act="silu",
              tie_word_embeddings=False, attention_bias=False, mlp_bias=False, bos_token_id=None, eos_token_id=0,
              pad_token_id=0, torch_dtype="float32")
# name -> (HF config, default lengths, what it is)
SHAPES = {
    "llama-57m": (_LLAMA | dict(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
                                num_attention_heads=8, num_key_value_heads=2, head_dim=64,
                                max_position_embeddings=65536, rope_theta=500000.0),
                  (8192, 32768), "issue 3's 57M Llama (hidden 512, 8 layers, 8 heads / 2 KV, vocab 32,000): CPU"),
    "llama-8b": (_LLAMA | dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                               num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                               max_position_embeddings=131072, rope_theta=500000.0, torch_dtype="bfloat16"),
                 (32768, 131072), "Llama-3-8B shape (32 layers, hidden 4096, 32 heads / 8 KV): accelerators"),
    "tiny-llama": ({k: v for k, v in json.loads((EMBEDDED_MODEL / "config.json").read_text()).items()},
                   (256, 512), "the embedded tiny model's shape (hidden 256, 2 layers, vocab 4,096): tests"),
}
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def shape_folder(name: str, cache: Path | None = None) -> Path:
    """The HF folder of a named shape, written on first use under the cache (random weights, seed 0)."""
    if name not in SHAPES:
        raise ConfigError(f"bench: unknown shape {name!r} (choose {', '.join(SHAPES)}, or give a model folder)")
    config = SHAPES[name][0]
    digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:10]
    root = Path(cache or os.environ.get("JAXEVAL_BENCH_CACHE", Path.home() / ".cache" / "jaxeval" / "bench"))
    folder = root / f"{name}-{digest}"
    if (folder / "model.safetensors").is_file():
        return folder
    partial = root / f".{folder.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    write_random_llama(partial, config)
    for file in _TOKENIZER_FILES:
        shutil.copy2(EMBEDDED_MODEL / file, partial / file)
    try:
        partial.rename(folder)  # atomic: a concurrent writer's folder wins, ours is dropped
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def write_random_llama(folder: Path, config: dict, seed: int = 0) -> None:
    """Random Llama weights named and shaped as transformers' LlamaForCausalLM saves them."""
    from safetensors.numpy import save_file

    rng = np.random.default_rng(seed)
    v, d, f = config["vocab_size"], config["hidden_size"], config["intermediate_size"]
    h, kv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    dtype = np.float32
    if config.get("torch_dtype") == "bfloat16":
        import ml_dtypes
        dtype = ml_dtypes.bfloat16

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) / np.sqrt(shape[-1])).astype(dtype)

    tensors = {"model.embed_tokens.weight": w(v, d), "model.norm.weight": np.ones(d, dtype), "lm_head.weight": w(v, d)}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors |= {p + "self_attn.q_proj.weight": w(h * hd, d), p + "self_attn.k_proj.weight": w(kv * hd, d),
                    p + "self_attn.v_proj.weight": w(kv * hd, d), p + "self_attn.o_proj.weight": w(d, h * hd),
                    p + "mlp.gate_proj.weight": w(f, d), p + "mlp.up_proj.weight": w(f, d),
                    p + "mlp.down_proj.weight": w(d, f), p + "input_layernorm.weight": np.ones(d, dtype),
                    p + "post_attention_layernorm.weight": np.ones(d, dtype)}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
