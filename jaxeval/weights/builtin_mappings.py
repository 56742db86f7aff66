"""Built-in mappings (jaxeval.weights.mapping), by name: other trainers' checkpoints that load with
`--mapping NAME` and nothing else.

easydel: EasyDeL 0.3.0's save_pretrained folders (jaxeval.weights.easydel_tree) of its Llama-style decoders
(Llama, Qwen3, Mistral-shaped). Its Flax kernels are [in, out] as jaxeval's, so every rule is a path and the
implied reshape: q/k/v [D, heads * hd] -> [D, heads, hd], o [heads * hd, D] -> [heads, hd, D]. It saves
lm_head/kernel for tied models too (the forward uses the embedding): that leaf is then left unread.
"""

_EASYDEL_LAYER = "model/layers/{layer}/"

EASYDEL = {
    "format": "jaxeval-mapping",
    "version": 1,
    "unused_rules": "ignore",  # one mapping for several families: rules for parameters a config lacks drop out
    "params": {
        "embed": "model/embed_tokens/embedding",
        "final_norm": "model/norm/kernel",
        "lm_head": "lm_head/kernel",
        "layers/attn_norm": _EASYDEL_LAYER + "input_layernorm/kernel",
        "layers/mlp_norm": _EASYDEL_LAYER + "post_attention_layernorm/kernel",
        "layers/wq": _EASYDEL_LAYER + "self_attn/q_proj/kernel",
        "layers/wk": _EASYDEL_LAYER + "self_attn/k_proj/kernel",
        "layers/wv": _EASYDEL_LAYER + "self_attn/v_proj/kernel",
        "layers/wo": _EASYDEL_LAYER + "self_attn/o_proj/kernel",
        "layers/bq": _EASYDEL_LAYER + "self_attn/q_proj/bias",
        "layers/bk": _EASYDEL_LAYER + "self_attn/k_proj/bias",
        "layers/bv": _EASYDEL_LAYER + "self_attn/v_proj/bias",
        "layers/q_norm": _EASYDEL_LAYER + "self_attn/q_norm/kernel",
        "layers/k_norm": _EASYDEL_LAYER + "self_attn/k_norm/kernel",
        "layers/w_gate": _EASYDEL_LAYER + "mlp/gate_proj/kernel",
        "layers/w_up": _EASYDEL_LAYER + "mlp/up_proj/kernel",
        "layers/w_down": _EASYDEL_LAYER + "mlp/down_proj/kernel",
    },
}

BUILTIN: dict[str, dict] = {"easydel": EASYDEL}
