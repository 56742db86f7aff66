"""MaxText's model presets for the model_names jaxeval reads (`model_name=` in a MaxText config).

Values as MaxText 0.2.5 ships them in `maxtext/configs/models/<model_name>.yml` (only the keys that
shape the model; the vision-tower, dropout and sharding keys of those files are not the decoder's),
and the defaults of `maxtext/configs/base.yml` for the keys a preset leaves out. MaxText applies a
preset over base.yml, then the run's YAML and command-line overrides over both
(`maxtext/configs/pyconfig.py`); jaxeval.weights.maxtext_config does the same with these tables.
"""

from __future__ import annotations

# maxtext/configs/base.yml (0.2.5), the model-shaping keys only.
BASE = {
    "decoder_block": "llama2", "base_emb_dim": 2048, "base_num_query_heads": 16, "base_num_kv_heads": 16,
    "base_mlp_dim": 7168, "base_moe_mlp_dim": -1, "base_num_decoder_layers": 16, "head_dim": 128,
    "mlp_activations": ["silu", "linear"], "vocab_size": 32000, "logits_via_embedding": False,
    "normalize_embedding_logits": True, "normalization_layer_epsilon": 1e-05, "rope_type": "default",
    "rope_max_timescale": 10000, "local_rope_max_timescale": -1, "rope_linear_scaling_factor": 1.0,
    "rope_use_scale": True, "sliding_window_size": 0, "use_qk_norm": False, "num_experts": 1,
    "num_experts_per_tok": 1, "norm_topk_prob": False, "use_post_attn_norm": False, "use_post_ffw_norm": False,
    "final_logits_soft_cap": 0.0, "attn_logits_soft_cap": 0.0, "max_position_embeddings": 163840,
    "scan_layers": True, "param_scan_axis": 1, "use_multimodal": False, "tokenizer_path": "",
    "quantization": "", "attention_bias": False, "mlp_bias": False, "first_num_dense_layers": 0,
    "shared_experts": 0, "fused_qkv": False, "fused_mlp": False, "share_kv_projections": False,
    "global_parameter_scale": 1, "inhomogeneous_layer_cycle_interval": 1, "rope_interleave": True,
    "attention_sink": False, "routed_bias": False, "mlp_activations_limit": -1.0, "original_max_position_embeddings": 4096,
    "rope_factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "rope_truncate": True,
    "rope_attention_scaling": False, "routed_scaling_factor": 1.0, "routed_score_func": "",
    "attention_type": "global", "q_lora_rank": 0, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "n_routing_groups": -1, "topk_routing_group": -1, "use_indexer": False,
}

_SILU, _GELU = ["silu", "linear"], ["gelu", "linear"]


def _llama(emb, heads, kv, mlp, layers, vocab, theta=10000, block="llama2"):
    return {"base_emb_dim": emb, "base_num_query_heads": heads, "base_num_kv_heads": kv, "base_mlp_dim": mlp,
            "base_num_decoder_layers": layers, "head_dim": 128, "mlp_activations": _SILU, "vocab_size": vocab,
            "logits_via_embedding": False, "normalization_layer_epsilon": 1e-05, "rope_max_timescale": theta,
            "decoder_block": block}


def _gemma3(layers, emb, heads, kv, mlp, head_dim):
    return {"base_num_decoder_layers": layers, "base_emb_dim": emb, "base_num_query_heads": heads,
            "base_num_kv_heads": kv, "base_mlp_dim": mlp, "head_dim": head_dim, "mlp_activations": _GELU,
            "vocab_size": 262144, "decoder_block": "gemma3", "normalization_layer_epsilon": 1e-06,
            "logits_via_embedding": True, "sliding_window_size": 1024, "use_post_attn_norm": True,
            "use_post_ffw_norm": True, "local_rope_max_timescale": 10000, "rope_max_timescale": 1000000,
            "rope_linear_scaling_factor": 8.0}


def _gemma2(layer_pairs, emb, heads, kv, mlp, head_dim):
    # base_num_decoder_layers counts MaxText's layers, each a (local, global) pair of the model's layers
    return {"base_num_decoder_layers": layer_pairs, "base_emb_dim": emb, "base_num_query_heads": heads,
            "base_num_kv_heads": kv, "base_mlp_dim": mlp, "head_dim": head_dim, "mlp_activations": _GELU,
            "vocab_size": 256128, "decoder_block": "gemma2", "normalization_layer_epsilon": 1e-06,
            "logits_via_embedding": True, "final_logits_soft_cap": 30.0, "attn_logits_soft_cap": 50.0,
            "sliding_window_size": 4096, "use_post_attn_norm": True, "use_post_ffw_norm": True}


def _qwen3(emb, heads, mlp, layers, tied):
    return {"base_emb_dim": emb, "base_num_query_heads": heads, "base_num_kv_heads": 8, "base_mlp_dim": mlp,
            "base_num_decoder_layers": layers, "head_dim": 128, "mlp_activations": _SILU, "vocab_size": 151936,
            "decoder_block": "qwen3", "normalization_layer_epsilon": 1e-06, "rope_max_timescale": 1000000,
            "use_qk_norm": True, "logits_via_embedding": tied, "normalize_embedding_logits": False}


def _qwen3_moe(emb, moe, heads, layers, theta):
    return {"decoder_block": "qwen3_moe", "base_emb_dim": emb, "base_mlp_dim": moe, "base_num_query_heads": heads,
            "base_num_kv_heads": 4, "base_num_decoder_layers": layers, "head_dim": 128, "mlp_activations": _SILU,
            "vocab_size": 151936, "normalization_layer_epsilon": 1e-06, "use_qk_norm": True, "num_experts": 128,
            "num_experts_per_tok": 8, "base_moe_mlp_dim": moe, "norm_topk_prob": True, "rope_max_timescale": theta}


def _mixtral(emb, heads, mlp, layers, vocab):
    return {**_llama(emb, heads, 8, mlp, layers, vocab, 1000000, "mixtral"), "base_moe_mlp_dim": mlp,
            "num_experts": 8, "num_experts_per_tok": 2}


def _gpt_oss(heads, experts, layers):
    return {"base_emb_dim": 2880, "base_num_query_heads": heads, "base_num_kv_heads": 8, "head_dim": 64,
            "sliding_window_size": 128, "attention_bias": True, "attention_sink": True, "rope_type": "yarn",
            "rope_max_timescale": 150000, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
            "rope_factor": 32, "beta_fast": 32, "beta_slow": 1, "rope_interleave": False, "rope_truncate": False,
            "rope_attention_scaling": True, "base_mlp_dim": 2880, "base_moe_mlp_dim": 2880,
            "mlp_activations": ["sigmoid", "linear"], "mlp_activations_limit": 7.0, "routed_bias": True,
            "mlp_bias": True, "num_experts": experts, "num_experts_per_tok": 4, "base_num_decoder_layers": layers,
            "vocab_size": 201088, "normalization_layer_epsilon": 1.0e-5, "logits_via_embedding": False,
            "decoder_block": "gpt_oss", "inhomogeneous_layer_cycle_interval": 2}


# configs/models/deepseek3-671b.yml (MaxText routes without expert groups: n_routing_groups stays -1)
DEEPSEEK3_671B = {
    "base_emb_dim": 7168, "base_num_query_heads": 128, "base_num_kv_heads": 128, "base_mlp_dim": 18432,
    "base_moe_mlp_dim": 2048, "base_num_decoder_layers": 61, "first_num_dense_layers": 3, "mlp_activations": _SILU,
    "vocab_size": 129280, "logits_via_embedding": False, "normalization_layer_epsilon": 1.0e-6, "num_experts": 256,
    "num_experts_per_tok": 8, "shared_experts": 1, "routed_scaling_factor": 2.5, "routed_score_func": "sigmoid",
    "routed_bias": True, "decoder_block": "deepseek", "attention_type": "mla", "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "mscale": 1.0, "rope_type": "yarn",
    "rope_max_timescale": 10000, "max_position_embeddings": 163840, "original_max_position_embeddings": 4096,
    "rope_factor": 40, "beta_fast": 32, "rope_interleave": True, "rope_truncate": True, "rope_attention_scaling": False,
}


PRESETS: dict[str, dict] = {
    "llama2-7b": _llama(4096, 32, 32, 11008, 32, 32000),
    "llama2-13b": _llama(5120, 40, 40, 13824, 40, 32000),
    "llama2-70b": _llama(8192, 64, 8, 28672, 80, 32000),
    "llama3-8b": _llama(4096, 32, 8, 14336, 32, 128256, 500000),
    "llama3-70b": _llama(8192, 64, 8, 28672, 80, 128256, 500000),
    "llama3-405b": _llama(16384, 128, 8, 53248, 126, 128256, 500000),
    "llama3.1-8b": _llama(4096, 32, 8, 14336, 32, 128256, 500000),
    "llama3.1-70b": _llama(8192, 64, 8, 28672, 80, 128256, 500000),
    "llama3.1-405b": _llama(16384, 128, 8, 53248, 126, 128256, 500000),
    "llama3.3-70b": _llama(8192, 64, 8, 28672, 80, 128256, 500000),
    "mistral-7b": _llama(4096, 32, 8, 14336, 32, 32000, 1000000, "mistral"),
    "mixtral-8x7b": _mixtral(4096, 32, 14336, 32, 32000),
    "mixtral-8x22b": _mixtral(6144, 48, 16384, 56, 32768),
    "gemma2-2b": _gemma2(13, 2304, 8, 4, 9216, 256),
    "gemma2-9b": _gemma2(21, 3584, 16, 8, 14336, 256),
    "gemma2-27b": _gemma2(23, 4608, 32, 16, 36864, 128),
    "gemma3-4b": _gemma3(34, 2560, 8, 4, 10240, 256),
    "gemma3-12b": _gemma3(48, 3840, 16, 8, 15360, 256),
    "gemma3-27b": _gemma3(62, 5376, 32, 16, 21504, 128),
    "qwen3-0.6b": _qwen3(1024, 16, 3072, 28, True),
    "qwen3-1.7b": _qwen3(2048, 16, 6144, 28, True),
    "qwen3-4b": _qwen3(2560, 32, 9728, 36, True),
    "qwen3-8b": _qwen3(4096, 32, 12288, 36, False),
    "qwen3-14b": _qwen3(5120, 40, 17408, 40, False),
    "qwen3-32b": _qwen3(5120, 64, 25600, 64, False),
    "qwen3-30b-a3b": _qwen3_moe(2048, 768, 32, 48, 10000000),
    "qwen3-235b-a22b": _qwen3_moe(4096, 1536, 64, 94, 5000000),
    "deepseek3-671b": DEEPSEEK3_671B,
    "gpt-oss-20b": _gpt_oss(64, 32, 24),
    "gpt-oss-120b": _gpt_oss(64, 128, 36),
}
