"""The FLOPs a read needs, from a model config: `jaxeval plan`'s cost model and `jaxeval bench`'s MFU.

One formula for both, so a plan's estimate and a bench's measured utilisation count the same work.
"""

from __future__ import annotations

from jaxeval.errors import ConfigError


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
