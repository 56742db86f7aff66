"""MaxText-layout checkpoints written in-test with plain Orbax, from Hugging Face tensors, in the tree layout
MaxText's converter writes (../shared/specs/maxtext_reference.md §3 and §6): no MaxText install needed.

The forward transformations here are the ones the spec measured on MaxText's to_maxtext output; the
reader (jaxeval.weights.maxtext_params) must undo them.
"""

from __future__ import annotations

import numpy as np


def interleave(w):
    """Hugging Face's half-split RoPE dims -> LLaMARotaryEmbedding's interleaved pairs (last axis)."""
    h = w.shape[-1] // 2
    return np.stack([w[..., :h], w[..., h:]], -1).reshape(w.shape)


def layer_leaves(t: dict, i: int, c: dict, family: str) -> dict:
    """One HF layer's tensors as a MaxText layer's leaves (nested dict), per family."""
    p = f"model.layers.{i}."
    e, h, kv, d = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    q = t[p + "self_attn.q_proj.weight"].T.reshape(e, h, d)
    k = t[p + "self_attn.k_proj.weight"].T.reshape(e, kv, d)
    if family == "llama31":
        q = interleave(q) / np.sqrt(np.float32(d))
        k = interleave(k)
    if family == "gemma2":  # GEMMA2_..._HOOK_FN scale_query_layer
        q = q * np.float32(1 / np.sqrt(d))
    attn = {"query": {"kernel": q}, "key": {"kernel": k},
            "value": {"kernel": t[p + "self_attn.v_proj.weight"].T.reshape(e, kv, d)},
            "out": {"kernel": t[p + "self_attn.o_proj.weight"].T.reshape(h, d, e)}}
    mlp = {"wi_0": {"kernel": t[p + "mlp.gate_proj.weight"].T}, "wi_1": {"kernel": t[p + "mlp.up_proj.weight"].T},
           "wo": {"kernel": t[p + "mlp.down_proj.weight"].T}}
    if family == "llama31":
        return {"self_attention": attn, "mlp": mlp,
                "pre_self_attention_layer_norm": {"scale": t[p + "input_layernorm.weight"]},
                "post_self_attention_layer_norm": {"scale": t[p + "post_attention_layernorm.weight"]}}
    one = np.float32(1.0)
    if family == "gemma2":
        return {"self_attention": attn, "mlp": mlp,
                "pre_self_attention_norm": {"scale": t[p + "input_layernorm.weight"] + one},
                "post_self_attention_norm": {"scale": t[p + "post_attention_layernorm.weight"] + one},
                "pre_ffw_norm": {"scale": t[p + "pre_feedforward_layernorm.weight"] + one},
                "post_ffw_norm": {"scale": t[p + "post_feedforward_layernorm.weight"] + one}}
    attn |= {"query_norm": {"scale": t[p + "self_attn.q_norm.weight"] + one},
             "key_norm": {"scale": t[p + "self_attn.k_norm.weight"] + one}}
    return {"self_attention": attn, "mlp": mlp,
            "pre_self_attention_norm": {"scale": t[p + "input_layernorm.weight"] + one},
            "post_self_attention_norm": {"scale": t[p + "post_attention_layernorm.weight"] + one},
            "pre_ffw_norm": {"scale": t[p + "pre_feedforward_layernorm.weight"] + one},
            "post_ffw_norm": {"scale": t[p + "post_feedforward_layernorm.weight"] + one}}


def gpt_oss_layer(t: dict, i: int, c: dict) -> dict:
    """One HF gpt-oss layer as MaxText's GptOssDecoderLayer leaves (GPT_OSS_TO_HF_PARAM_HOOK_FN: kernels transposed and
    reshaped, biases reshaped to [heads, head_dim], the fused gate_up split by its interleave)."""
    p = f"model.layers.{i}."
    e, h, kv, d = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def proj(name, heads):
        return {"kernel": t[p + f"self_attn.{name}.weight"].T.reshape(e, heads, d),
                "bias": t[p + f"self_attn.{name}.bias"].reshape(heads, d)}
    gate_up, gate_up_bias = t[p + "mlp.experts.gate_up_proj"], t[p + "mlp.experts.gate_up_proj_bias"]
    return {"pre_self_attention_layer_norm": {"scale": t[p + "input_layernorm.weight"]},
            "post_self_attention_layer_norm": {"scale": t[p + "post_attention_layernorm.weight"]},
            "GptOssAttention": {"query": proj("q_proj", h), "key": proj("k_proj", kv), "value": proj("v_proj", kv),
                                "out": {"kernel": t[p + "self_attn.o_proj.weight"].T.reshape(h, d, e),
                                        "bias": t[p + "self_attn.o_proj.bias"]},
                                "sinks": t[p + "self_attn.sinks"]},
            "GptOssMlp": {"gate": {"kernel": t[p + "mlp.router.weight"].T, "bias": t[p + "mlp.router.bias"]},
                          "wi_0": gate_up[..., ::2], "wi_1": gate_up[..., 1::2],
                          "wi_0_bias": gate_up_bias[..., ::2], "wi_1_bias": gate_up_bias[..., 1::2],
                          "wo": t[p + "mlp.experts.down_proj"], "wo_bias": t[p + "mlp.experts.down_proj_bias"]}}


def gpt_oss_params(t: dict, c: dict, scanned: bool) -> dict:
    """HF gpt-oss tensors -> MaxText's tree: scanned per (sliding, global) slot, layers/layers_<k> with block j on
    axis 1 holding layer 2j + k; unscanned, one layers_<i> per layer."""
    n = c["num_hidden_layers"]
    layers = [gpt_oss_layer(t, i, c) for i in range(n)]
    decoder = {"decoder_norm": {"scale": t["model.norm.weight"]}, "logits_dense": {"kernel": t["lm_head.weight"].T}}
    if scanned:
        decoder["layers"] = {f"layers_{k}": _stack(layers[k::2]) for k in range(2)}
    else:
        decoder |= {f"layers_{i}": layer for i, layer in enumerate(layers)}
    return {"decoder": decoder, "token_embedder": {"embedding": t["model.embed_tokens.weight"]}}


GPT_OSS = {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "vocab_size": 64, "hidden_size": 32,
           "intermediate_size": 16, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 8, "rms_norm_eps": 1e-5,
           "max_position_embeddings": 131072, "tie_word_embeddings": False, "attention_bias": True,
           "layer_types": ["sliding_attention", "full_attention"] * 2, "swiglu_limit": 7.0,
           "rope_parameters": {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                               "beta_slow": 1.0, "original_max_position_embeddings": 4096, "truncate": False}}


def gpt_oss_tensors(c: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    v, d, f, x = c["vocab_size"], c["hidden_size"], c["intermediate_size"], c["num_local_experts"]
    h, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def w(*shape, fan_in=None):
        return (rng.standard_normal(shape) / np.sqrt(fan_in or shape[-1])).astype(np.float32)

    def b(*shape):
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    t = {"model.embed_tokens.weight": w(v, d), "model.norm.weight": 1 + b(d), "lm_head.weight": w(v, d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t |= {p + "self_attn.q_proj.weight": w(h * hd, d), p + "self_attn.q_proj.bias": b(h * hd),
              p + "self_attn.k_proj.weight": w(kv * hd, d), p + "self_attn.k_proj.bias": b(kv * hd),
              p + "self_attn.v_proj.weight": w(kv * hd, d), p + "self_attn.v_proj.bias": b(kv * hd),
              p + "self_attn.o_proj.weight": w(d, h * hd), p + "self_attn.o_proj.bias": b(d),
              p + "self_attn.sinks": 20 * b(h), p + "mlp.router.weight": w(x, d), p + "mlp.router.bias": b(x),
              p + "mlp.experts.gate_up_proj": w(x, d, 2 * f, fan_in=d), p + "mlp.experts.gate_up_proj_bias": b(x, 2 * f),
              p + "mlp.experts.down_proj": w(x, f, d, fan_in=f), p + "mlp.experts.down_proj_bias": b(x, d),
              p + "input_layernorm.weight": 1 + b(d), p + "post_attention_layernorm.weight": 1 + b(d)}
    return t


DEEPSEEK = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 64, "hidden_size": 32,
            "intermediate_size": 48, "moe_intermediate_size": 16, "num_hidden_layers": 3, "first_k_dense_replace": 1,
            "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 1, "topk_group": 1,
            "routed_scaling_factor": 2.5, "norm_topk_prob": True, "num_attention_heads": 4, "num_key_value_heads": 4,
            "q_lora_rank": 16, "kv_lora_rank": 8, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8,
            "head_dim": 4, "rms_norm_eps": 1e-6, "max_position_embeddings": 163840, "tie_word_embeddings": False,
            "rope_interleave": True, "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                                         "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                                                         "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}}


def deepseek_tensors(c: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    d, h, e = c["hidden_size"], c["num_attention_heads"], c["n_routed_experts"]
    qk, kv_b = c["qk_nope_head_dim"] + c["qk_rope_head_dim"], c["qk_nope_head_dim"] + c["v_head_dim"]
    i_moe = c["moe_intermediate_size"]

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def norm(n):
        return (1 + 0.2 * rng.standard_normal(n)).astype(np.float32)
    t = {"model.embed_tokens.weight": w(c["vocab_size"], d), "model.norm.weight": norm(d),
         "lm_head.weight": w(c["vocab_size"], d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t |= {p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
              p + "self_attn.q_a_proj.weight": w(c["q_lora_rank"], d), p + "self_attn.q_a_layernorm.weight": norm(c["q_lora_rank"]),
              p + "self_attn.q_b_proj.weight": w(h * qk, c["q_lora_rank"]),
              p + "self_attn.kv_a_proj_with_mqa.weight": w(c["kv_lora_rank"] + c["qk_rope_head_dim"], d),
              p + "self_attn.kv_a_layernorm.weight": norm(c["kv_lora_rank"]),
              p + "self_attn.kv_b_proj.weight": w(h * kv_b, c["kv_lora_rank"]),
              p + "self_attn.o_proj.weight": w(d, h * c["v_head_dim"])}
        if i < c["first_k_dense_replace"]:
            f = c["intermediate_size"]
            t |= {p + "mlp.gate_proj.weight": w(f, d), p + "mlp.up_proj.weight": w(f, d), p + "mlp.down_proj.weight": w(d, f)}
            continue
        t |= {p + "mlp.gate.weight": w(e, d), p + "mlp.gate.e_score_correction_bias": (0.5 * rng.standard_normal(e)).astype(np.float32)}
        for name in ("gate", "up"):
            t |= {p + f"mlp.experts.{x}.{name}_proj.weight": w(i_moe, d) for x in range(e)}
            t[p + f"mlp.shared_experts.{name}_proj.weight"] = w(i_moe, d)
        t |= {p + f"mlp.experts.{x}.down_proj.weight": w(d, i_moe) for x in range(e)}
        t[p + "mlp.shared_experts.down_proj.weight"] = w(d, i_moe)
    return t


def deepseek_state(t: dict, c: dict, scanned: bool) -> dict:
    """HF DeepSeek-V3 tensors -> the items of a MaxText training step (DEEPSEEK_MAXTEXT_TO_HF_PARAM_MAPPING's leaves:
    kernels transposed and reshaped; dense_layers / moe_layers, each scanned on axis 1 or one per layer), with the
    routed gate bias where MaxText's training state keeps it: nnx_aux/model/..., stacked on axis 0."""
    d, h = c["hidden_size"], c["num_attention_heads"]
    qk, kv_b = c["qk_nope_head_dim"] + c["qk_rope_head_dim"], c["qk_nope_head_dim"] + c["v_head_dim"]

    def layer(i):
        p = f"model.layers.{i}."
        out = {"pre_self_attention_layer_norm": {"scale": t[p + "input_layernorm.weight"]},
               "post_self_attention_layer_norm": {"scale": t[p + "post_attention_layernorm.weight"]},
               "self_attention": {
                   "wq_a": {"kernel": t[p + "self_attn.q_a_proj.weight"].T},
                   "q_norm": {"scale": t[p + "self_attn.q_a_layernorm.weight"]},
                   "wq_b": {"kernel": t[p + "self_attn.q_b_proj.weight"].T.reshape(c["q_lora_rank"], h, qk)},
                   "wkv_a": {"kernel": t[p + "self_attn.kv_a_proj_with_mqa.weight"].T},
                   "kv_norm": {"scale": t[p + "self_attn.kv_a_layernorm.weight"]},
                   "wkv_b": {"kernel": t[p + "self_attn.kv_b_proj.weight"].T.reshape(c["kv_lora_rank"], h, kv_b)},
                   "out": {"kernel": t[p + "self_attn.o_proj.weight"].T.reshape(h, c["v_head_dim"], d)}}}
        if i < c["first_k_dense_replace"]:
            out["mlp"] = {f"wi_{k}": {"kernel": t[p + f"mlp.{n}_proj.weight"].T} for k, n in enumerate(("gate", "up"))}
            out["mlp"]["wo"] = {"kernel": t[p + "mlp.down_proj.weight"].T}
            return out
        experts = range(c["n_routed_experts"])
        out["DeepSeekMoeBlock_0"] = {
            "MoeBlock_0": {"gate": {"kernel": t[p + "mlp.gate.weight"].T},
                           "wi_0": np.stack([t[p + f"mlp.experts.{x}.gate_proj.weight"].T for x in experts]),
                           "wi_1": np.stack([t[p + f"mlp.experts.{x}.up_proj.weight"].T for x in experts]),
                           "wo": np.stack([t[p + f"mlp.experts.{x}.down_proj.weight"].T for x in experts])},
            "shared_experts": {"wi_0": {"kernel": t[p + "mlp.shared_experts.gate_proj.weight"].T},
                               "wi_1": {"kernel": t[p + "mlp.shared_experts.up_proj.weight"].T},
                               "wo": {"kernel": t[p + "mlp.shared_experts.down_proj.weight"].T}}}
        return out
    k, n = c["first_k_dense_replace"], c["num_hidden_layers"]
    decoder = {"decoder_norm": {"scale": t["model.norm.weight"]}, "logits_dense": {"kernel": t["lm_head.weight"].T}}
    biases = [{"DeepSeekMoeBlock_0": {"MoeBlock_0": {"gate": {"bias": t[f"model.layers.{i}.mlp.gate.e_score_correction_bias"]}}}}
              for i in range(k, n)]
    if scanned:
        decoder |= {"dense_layers": _stack([layer(i) for i in range(k)]), "moe_layers": _stack([layer(i) for i in range(k, n)])}
        aux = {"moe_layers": _stack(biases, axis=0)}
    else:
        decoder |= {f"dense_layers_{i}": layer(i) for i in range(k)}
        decoder |= {f"moe_layers_{i - k}": layer(i) for i in range(k, n)}
        aux = {f"moe_layers_{j}": b for j, b in enumerate(biases)}
    state = training_state({"decoder": decoder, "token_embedder": {"embedding": t["model.embed_tokens.weight"]}}, 1)
    return state | {"nnx_aux": {"model": {"decoder": aux}}}


def _stack(trees: list, axis: int = 1):
    if isinstance(trees[0], dict):
        return {k: _stack([t[k] for t in trees], axis) for k in trees[0]}
    return np.stack(trees, axis=axis)


def maxtext_params(t: dict, c: dict, family: str, scanned: bool) -> dict:
    """HF tensors -> MaxText's Linen parameter tree (decoder, token_embedder)."""
    n = c["num_hidden_layers"]
    layers = [layer_leaves(t, i, c, family) for i in range(n)]
    decoder: dict = {"decoder_norm": {"scale": t["model.norm.weight"]}}
    embed = t["model.embed_tokens.weight"]
    if family == "gemma2":
        decoder["decoder_norm"]["scale"] = decoder["decoder_norm"]["scale"] + np.float32(1.0)
        embed = embed * np.float32(c["hidden_size"] ** 0.5)  # pad_hf_embedding_layer: a float32 normalizer

        def pair(j):  # maxtext/models/gemma2.py: layer 2j as the _local modules, layer 2j + 1 as the _global ones
            return {f"{module}{half}": layers[2 * j + h][module] for h, half in enumerate(("_local", "_global"))
                    for module in layers[0]}
        pairs = [pair(j) for j in range(n // 2)]
        if scanned:
            decoder["layers"] = _stack(pairs)
        else:
            decoder |= {f"layers_{j}": p for j, p in enumerate(pairs)}
    elif family == "gemma3":
        decoder["decoder_norm"]["scale"] = decoder["decoder_norm"]["scale"] + np.float32(1.0)
        # the converter's normalizer, rounded to bfloat16 (GEMMA3_..._HOOK_FN pad_and_scale_embedding)
        embed = embed * np.float32(np.asarray(c["hidden_size"] ** 0.5, dtype=np.float32).astype("bfloat16"))
        blocks = n // 6
        if scanned:
            decoder["layers"] = {f"layers_{k}": _stack([layers[6 * j + k] for j in range(blocks)]) for k in range(6)}
            decoder["layers_remainder"] = {f"layers_{j}": layers[6 * blocks + j] for j in range(n % 6)}
        else:
            decoder |= {f"layers_{i}": layer for i, layer in enumerate(layers)}
    else:
        decoder["logits_dense"] = {"kernel": t["lm_head.weight"].T}
        if scanned:
            decoder["layers"] = _stack(layers)
        else:
            decoder |= {f"layers_{i}": layer for i, layer in enumerate(layers)}
    return {"decoder": decoder, "token_embedder": {"embedding": embed}}


def save_items(folder, tree: dict) -> None:
    import orbax.checkpoint as ocp

    ocp.PyTreeCheckpointer().save(str(folder), tree)


def training_state(params: dict, step: int = 3) -> dict:
    """A training run's items: step, params/params, Adam's mu and nu (here marked by their values), count."""
    mu = {"params": _map(params, lambda a: np.full_like(a, 7.0))}
    nu = {"params": _map(params, lambda a: np.full_like(a, 9.0))}
    return {"step": np.int32(step), "params": {"params": params},
            "opt_state": {"0": {"count": np.int32(step), "mu": mu, "nu": nu}}}


def nnx_values(params: dict) -> dict:
    """generate_param_only_checkpoint's NNX tree: every leaf under `value`, no params wrapper."""
    return _map(params, lambda a: {"value": a})


def _map(tree, f):
    return {k: _map(v, f) for k, v in tree.items()} if isinstance(tree, dict) else f(tree)


GEMMA3_TEXT = {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "vocab_size": 64,
               "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 7, "num_attention_heads": 4,
               "num_key_value_heads": 2, "head_dim": 8, "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-6,
               "sliding_window": 8, "max_position_embeddings": 4096, "hidden_activation": "gelu_pytorch_tanh",
               "tie_word_embeddings": True, "final_logit_softcapping": None, "attn_logit_softcapping": None,
               "layer_types": ["sliding_attention"] * 5 + ["full_attention"] + ["sliding_attention"],
               "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                   "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}


GEMMA2 = {"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "vocab_size": 64, "hidden_size": 32,
          "intermediate_size": 48, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 8, "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-6, "sliding_window": 8,
          "max_position_embeddings": 4096, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
          "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "rope_theta": 10000.0,
          "layer_types": ["sliding_attention", "full_attention"] * 2}


def gemma3_tensors(c: dict, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    v, d, f = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    h, kv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def norm(n):
        return (0.2 * rng.standard_normal(n)).astype(np.float32)

    t = {"model.embed_tokens.weight": w(v, d), "model.norm.weight": norm(d)}
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t |= {p + "self_attn.q_proj.weight": w(h * hd, d), p + "self_attn.k_proj.weight": w(kv * hd, d),
              p + "self_attn.v_proj.weight": w(kv * hd, d), p + "self_attn.o_proj.weight": w(d, h * hd),
              p + "self_attn.q_norm.weight": norm(hd), p + "self_attn.k_norm.weight": norm(hd),
              p + "mlp.gate_proj.weight": w(f, d), p + "mlp.up_proj.weight": w(f, d), p + "mlp.down_proj.weight": w(d, f),
              p + "input_layernorm.weight": norm(d), p + "post_attention_layernorm.weight": norm(d),
              p + "pre_feedforward_layernorm.weight": norm(d), p + "post_feedforward_layernorm.weight": norm(d)}
    return t


def from_ours(params: dict, head_dim: int) -> dict:
    """jaxeval's own Llama parameters -> MaxText's llama2-block tree, scanned (query scale folded in, no interleave:
    MaxText's llama2/llama3 model_names rotate half-split dims like Hugging Face)."""
    layers = {k: np.moveaxis(np.asarray(v), 0, 1) for k, v in params["layers"].items()}
    return {"token_embedder": {"embedding": np.asarray(params["embed"])},
            "decoder": {"decoder_norm": {"scale": np.asarray(params["final_norm"])},
                        "logits_dense": {"kernel": np.asarray(params["lm_head"])},
                        "layers": {"self_attention": {"query": {"kernel": layers["wq"] / np.sqrt(np.float32(head_dim))},
                                                      "key": {"kernel": layers["wk"]}, "value": {"kernel": layers["wv"]},
                                                      "out": {"kernel": layers["wo"]}},
                                   "mlp": {"wi_0": {"kernel": layers["w_gate"]}, "wi_1": {"kernel": layers["w_up"]},
                                           "wo": {"kernel": layers["w_down"]}},
                                   "pre_self_attention_layer_norm": {"scale": layers["attn_norm"]},
                                   "post_self_attention_layer_norm": {"scale": layers["mlp_norm"]}}}}
