"""Named model shapes for `jaxeval bench`, their random-weight HF folders, and the FLOPs a read needs.

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


def attended_keys(tokens: int, window: int) -> int:
    """Sum over queries 0..tokens-1 of the keys each attends to (all earlier ones, or the last `window`)."""
    if not window or window >= tokens:
        return tokens * (tokens + 1) // 2
    return window * (window + 1) // 2 + (tokens - window) * window


def read_flops(config, tokens: int, read_rows: int) -> dict:
    """FLOPs a teacher-forced read needs: every matmul once, causal (and windowed) attention only,
    the LM head at the read rows only. config: jaxeval.models.config.ModelConfig.

    -> {"trunk", "attention", "head", "total"}: trunk = 2 per weight a token uses (q, k, v, o and the
    output gate where there is one, or DeepSeek-V3's latent projections; the MLP; a mixture of experts
    counts its router, the top-k experts a token is routed to, not all E (jaxeval.models.moe.moe_flops's
    "routed"), and its shared expert; Gated DeltaNet layers their projections and short convolution);
    attention = QK^T and PV, 2 * 2 * head_dim per (query, attended key) per head (latent attention:
    2 * (qk_head_dim + v_head_dim), the unabsorbed form's; the absorbed form jaxeval runs multiplies
    over the latent width instead, more FLOPs for a smaller cache), and for Gated DeltaNet the
    recurrent form's three head_k x head_v products per token per value head (read k.S, rank-1
    update, read q.S); head = 2 * hidden * vocab
    per read row. Norms, rope, gates' elementwise work, softmax and the embedding gather are left out.
    """
    from jaxeval.models.families import FULL, LINEAR, SLIDING

    unknown = set(config.layer_types) - {FULL, SLIDING, LINEAR}
    if unknown:
        raise ConfigError(f"bench: no FLOP count for layer types {sorted(unknown)}")
    d, h = config.hidden_size, config.num_heads
    per_token = sum(_mlp_weights(config, i) + (_attention_weights(config) if t != LINEAR else _gdn_weights(config))
                    for i, t in enumerate(config.layer_types))
    trunk = 2 * tokens * per_token
    windows = [w for w, t in zip(config.layer_windows, config.layer_types) if t != LINEAR]
    # per (query, key) pair and head: QK^T over the query-key width, PV over the value width
    pair = (config.mla.qk_head_dim + config.mla.v_head_dim) if config.mla else 2 * config.head_dim
    attention = sum(2 * h * pair * attended_keys(tokens, w) for w in windows)
    if LINEAR in config.layer_types:
        g = config.linear_attention
        attention += 2 * 3 * g.head_k_dim * g.head_v_dim * g.num_v_heads * tokens * config.layer_types.count(LINEAR)
    head = 2 * read_rows * d * config.vocab_size
    return {"trunk": float(trunk), "attention": float(attention), "head": float(head),
            "total": float(trunk + attention + head)}


def _attention_weights(config) -> int:
    """Weights one token multiplies in an attention block: q, k, v, o (and the output gate), or
    DeepSeek-V3's latent projections (q_a/q_b or q_proj, kv_a, kv_b, o)."""
    d, h = config.hidden_size, config.num_heads
    m = config.mla
    if m is None:
        hd, kv = config.head_dim, config.num_kv_heads
        return d * (h + 2 * kv) * hd + h * hd * d * (2 if config.attention_output_gate else 1)
    q = d * m.q_lora_rank + m.q_lora_rank * h * m.qk_head_dim if m.q_lora_rank else d * h * m.qk_head_dim
    kv = d * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)
    return q + kv + h * m.v_head_dim * d


def _mlp_weights(config, layer: int) -> int:
    """Weights one token multiplies in layer `layer`'s feed-forward block: the dense MLP, or a MoE's
    router, the top-k routed experts (not all E) and its shared expert(s)."""
    d = config.hidden_size
    if config.moe is None or layer < config.dense_layers:
        return 3 * d * config.intermediate_size
    from jaxeval.models.moe import moe_flops

    # the shared expert: DeepSeek-V3's own width; Qwen3.5-MoE's is the layer's dense MLP (intermediate_size)
    shared = config.shared_expert_intermediate_size or (
        config.intermediate_size if config.moe.family in ("qwen3_5_moe", "qwen3_next") else 0)
    f = moe_flops(1, config.moe, d, config.moe_intermediate_size, shared)
    return (f["routed"] + f["router"] + f["shared"]) // 2


def _gdn_weights(config) -> int:
    """Weights one token multiplies in a Gated DeltaNet mixer: q, k, v, z, b, a projections, the
    depthwise short convolution over q, k, v, and the output projection."""
    g, d = config.linear_attention, config.hidden_size
    qk, v = g.num_k_heads * g.head_k_dim, g.num_v_heads * g.head_v_dim
    return d * (2 * qk + 2 * v + 2 * g.num_v_heads) + g.conv_kernel * (2 * qk + v) + v * d
