"""Named model shapes `jaxeval compile --model` accepts besides a model folder (config.json is enough):
Hugging Face config dicts of public architectures' sizes, for compiling only (no weights exist)."""

from __future__ import annotations

from jaxeval.bench.shapes import SHAPES as BENCH_SHAPES

_LLAMA31 = dict(architectures=["LlamaForCausalLM"], model_type="llama", rms_norm_eps=1e-5, hidden_act="silu",
                tie_word_embeddings=False, attention_bias=False, mlp_bias=False, vocab_size=128256, head_dim=128,
                max_position_embeddings=131072, rope_theta=500000.0, torch_dtype="bfloat16", eos_token_id=128001,
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192})
_FULL, _LINEAR = "full_attention", "linear_attention"
SHAPES = {
    "llama-3.1-8b": _LLAMA31 | dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                    num_attention_heads=32, num_key_value_heads=8),
    "llama-3.1-70b": _LLAMA31 | dict(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                                     num_attention_heads=64, num_key_value_heads=8),
    # Qwen3-30B-A3B's sizes: 128 experts, 8 routed per token
    "qwen3-30b-a3b": dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", vocab_size=151936,
                          hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_hidden_layers=48,
                          num_attention_heads=32, num_key_value_heads=4, head_dim=128, num_experts=128,
                          num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                          max_position_embeddings=131072, rope_theta=1000000.0, rms_norm_eps=1e-6,
                          tie_word_embeddings=False, torch_dtype="bfloat16", eos_token_id=151645),
    # a Qwen3.5 text hybrid: three Gated DeltaNet layers to one full-attention layer
    "qwen3.5-hybrid-4b": dict(model_type="qwen3_5_text", vocab_size=248320, hidden_size=2560, intermediate_size=9216,
                              num_hidden_layers=32, num_attention_heads=16, num_key_value_heads=4, head_dim=256,
                              linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                              linear_value_head_dim=128, linear_conv_kernel_dim=4, max_position_embeddings=262144,
                              layer_types=[_LINEAR, _LINEAR, _LINEAR, _FULL] * 8, eos_token_id=248044,
                              tie_word_embeddings=True, torch_dtype="bfloat16",
                              rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                                               "partial_rotary_factor": 0.25, "mrope_section": [11, 11, 10]}),
} | {name: config for name, (config, _, _) in BENCH_SHAPES.items()}


def named_config(name: str):
    """The ModelConfig of a named shape, or None when `name` is not one."""
    from jaxeval.models.config import config_from_hf

    if name not in SHAPES:
        return None
    return config_from_hf(dict(SHAPES[name]), where=f"named shape {name}")
