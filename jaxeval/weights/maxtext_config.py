"""A MaxText config (model_name preset, the run's YAML, command-line overrides) as a jaxeval model config.

A MaxText checkpoint stores no model config, only its tree, so the shape comes from MaxText's own
config, given as MaxText takes it on its command line: `model_name=llama3.1-8b override_model_config=True
base_emb_dim=4096 ... scan_layers=True`, optionally led by the path of a run's YAML
(`run.yml key=value ...`). As in MaxText (maxtext/configs/pyconfig.py) base.yml's defaults come first,
then the model_name preset, then the YAML, then the overrides; overriding a preset key needs
override_model_config=True. The result is a Hugging Face style config dict (parsed by
jaxeval.models.config.config_from_hf like any other) and a MaxTextStyle: how MaxText's layers hold their
weights, which jaxeval.weights.maxtext_params undoes.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import yaml

from jaxeval.errors import ConfigError
from jaxeval.weights.maxtext_presets import BASE, PRESETS

# decoder_block -> the Hugging Face model_type of the same architecture (maxtext/models/<block>.py).
BLOCKS = {"llama2": "llama", "mistral": "mistral", "mixtral": "mixtral", "qwen3": "qwen3",
          "qwen3_moe": "qwen3_moe", "gemma2": "gemma2", "gemma3": "gemma3_text",
          "gpt_oss": "gpt_oss", "deepseek": "deepseek_v3"}
# Blocks whose attention has no run-time query scale (no query_pre_attn_scalar in maxtext/models/<block>.py):
# MaxText's converters fold 1/sqrt(head_dim) into their query kernels instead.
QUERY_FOLDED = frozenset({"llama2", "mistral", "mixtral", "gemma2"})
GEMMA = ("gemma2", "gemma3")  # RMSNorm scales stored as 1 + w, tanh-GELU MLPs, post-attention/-MLP norms

# Keys MaxText reads for training, data, checkpointing, logging, hardware and sharding: they do not
# shape the model, so a config may hold them (a run's YAML always does).
_RUNTIME = re.compile(
    r"^(base_config|run_name|base_output_directory|hardware|skip_jax_distributed_system|steps|per_device_batch_size|"
    r"max_target_length|max_prefill_predict_length|dtype|weight_dtype|matmul_precision|attention|attention_type|"
    r"enable_dropout|dropout_rate|remat_policy|opt_type|learning_rate.*|warmup.*|cosine.*|adam_.*|gradient_.*|"
    r".*checkpoint.*|load_parameters_path|load_full_state_path|dataset_.*|train_.*|eval_.*|.*_data_columns|"
    r"tokenizer_type|add_bos|add_eos|packing|enable_.*|monitor_.*|async_.*|profiler.*|log_.*|.*metrics.*|"
    r"ici_.*|dcn_.*|mesh_axes|data_sharding|logical_axis_rules|.*sharding.*|num_slices|jax_cache_dir|"
    r"compile_topology.*|sa_.*|megablox|sparse_matmul|capacity_factor|load_balance_loss_weight|"
    r"override_model_config|model_name|scan_layers|tokenizer_path|hf_access_token|decode_sampling_.*|"
    r"prompt|autoregressive_decode_assert|quantize_kvcache|kv_quant_.*|reuse_example_batch|"
    r"enable_goodput_recording|vertex_tensorboard_.*|use_vertex_tensorboard|tensorboard_dir|grain_.*|"
    r"hf_path|hf_name|hf_train_files|hf_eval_.*|colocated_python_data_input|image_size_for_vit|"
    r".*_for_vit|vision_encoder_block|image_placeholder|simulated_cpu_devices_count)$")
# Model keys jaxeval reads (their values become the model's shape) or requires at base.yml's default.
_MODEL = frozenset(BASE) | {"base_moe_mlp_dim"}
# Model keys jaxeval reads only at these values (anything else changes the architecture in ways it does not run).
_FIXED = {"param_scan_axis": 1, "use_multimodal": False, "quantization": "", "fused_qkv": False, "fused_mlp": False,
          "share_kv_projections": False, "global_parameter_scale": 1, "use_indexer": False}
# Model keys a decoder block fixes (maxtext/models/gpt_oss.py builds biased, sink-attending layers in (sliding,
# global) pairs, YaRN without interleaving; the other blocks have none of that), checked on the merged config.
_BLOCK_FIXED = {"attention_bias": False, "mlp_bias": False, "routed_bias": False, "attention_sink": False,
                "inhomogeneous_layer_cycle_interval": 1, "rope_interleave": True, "first_num_dense_layers": 0,
                "shared_experts": 0, "routed_scaling_factor": 1.0, "routed_score_func": "", "attention_type": "global"}
_GPT_OSS_FIXED = {"attention_bias": True, "mlp_bias": True, "routed_bias": True, "attention_sink": True,
                  "inhomogeneous_layer_cycle_interval": 2, "rope_interleave": False, "rope_type": "yarn",
                  "routed_scaling_factor": 1.0, "routed_score_func": "", "first_num_dense_layers": 0,
                  "shared_experts": 0, "attention_type": "global"}
# maxtext/models/deepseek.py (DeepSeek-V3): latent attention with a low-rank query, sigmoid routing with a
# selection bias, YaRN (its softmax mscale in layers/attention_mla.py, no cos/sin scaling)
_DEEPSEEK_FIXED = {"attention_bias": False, "mlp_bias": False, "attention_sink": False,
                   "inhomogeneous_layer_cycle_interval": 1, "attention_type": "mla", "routed_score_func": "sigmoid",
                   "rope_type": "yarn", "rope_attention_scaling": False}


@dataclasses.dataclass(frozen=True)
class MaxTextStyle:
    """How MaxText's layers hold a model's weights, relative to the Hugging Face layout jaxeval uses."""

    block: str  # decoder_block
    query_folded: bool  # query kernels hold W_q / sqrt(head_dim)
    rope_interleaved: bool  # q/k head dims ordered (x0, x_{d/2}, x1, ...) for LLaMARotaryEmbedding
    norm_plus_one: bool  # RMSNorm scales stored as 1 + w (Gemma)
    embed_normalized: bool  # tied head divides logits by sqrt(emb_dim): the table holds E * sqrt(emb_dim)
    pattern: int  # layers per scanned block (Gemma 3's 6: five sliding, one global; Gemma 2's 2); 1 otherwise
    paired: bool = False  # Gemma 2: one MaxText layer is a (local, global) pair, modules suffixed _local / _global
    routed_bias: bool = False  # DeepSeek: a routed gate bias (an NNX MoEBiasVar) selects the experts


def _scalar(text: str):
    """A command-line value as MaxText (omegaconf) reads it: YAML, with 1e-6 a number as well."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:
            return float(value) if re.fullmatch(r"[-+]?\d[\d_]*(\.\d*)?[eE][-+]?\d+", value) else value
        except ValueError:
            return value
    return value


def parse_maxtext_args(given, where: str = "maxtext_config") -> dict:
    """`[RUN.yml] key=value ...` (a string, a list of those tokens, or a dict) -> {key: value} in MaxText's order of
    precedence (the YAML's keys, then the overrides)."""
    if isinstance(given, dict):
        return dict(given)
    tokens = given.split() if isinstance(given, str) else [str(t) for t in given]
    out: dict = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if not sep:
            if not token.endswith((".yml", ".yaml")):
                raise ConfigError(f"{where}: '{token}' is neither key=value nor a MaxText YAML file (.yml)")
            out.update(read_yaml(token, where))
            continue
        out[key.strip()] = _scalar(value.strip())
    if not out:
        raise ConfigError(f"{where}: empty (give model_name=... and MaxText's overrides, or a run's YAML)")
    return out


def read_yaml(path: str, where: str) -> dict:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{where}: {path}: unreadable MaxText YAML ({type(e).__name__}: {e})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {path}: expected a mapping of MaxText keys, got {type(raw).__name__}")
    return {k: _scalar(v) if isinstance(v, str) else v for k, v in raw.items()}


def resolve(given: dict, where: str = "maxtext_config") -> dict:
    """base.yml, the model_name preset and the given keys merged as MaxText merges them, each given key checked."""
    name = given.get("model_name", "default")
    if name != "default" and name not in PRESETS:
        raise ConfigError(f"{where}: model_name={name!r} is not one jaxeval reads (known: {', '.join(PRESETS)})")
    preset = PRESETS.get(name, {})
    for key, value in given.items():
        if key not in _MODEL and not _RUNTIME.match(key):
            raise ConfigError(f"{where}: MaxText config key '{key}' is not supported by jaxeval's MaxText reader "
                              "(it reads the decoder's shape keys; see docs/maxtext.md)")
        if key in _FIXED and value != _FIXED[key]:
            raise ConfigError(f"{where}: {key}={value!r} is not supported by jaxeval's MaxText reader "
                              f"(it reads {key}={_FIXED[key]!r} only)")
        if key in preset and value != preset[key] and not given.get("override_model_config", False):
            raise ConfigError(f"{where}: {key}={value!r} overrides model_name={name}'s {preset[key]!r}; MaxText "
                              "requires override_model_config=True for that")
    return {**BASE, **preset, **{k: v for k, v in given.items() if k in _MODEL or k in ("model_name", "tokenizer_path")}}


def style_of(m: dict) -> MaxTextStyle:
    block = m["decoder_block"]
    rope31 = block == "llama2" and (str(m.get("model_name", "")).startswith("llama3.1")
                                   or str(m["rope_type"]).startswith("llama3.1"))
    return MaxTextStyle(block=block, query_folded=block in QUERY_FOLDED, rope_interleaved=rope31,
                        norm_plus_one=block in GEMMA,
                        embed_normalized=bool(m["logits_via_embedding"] and m["normalize_embedding_logits"]),
                        pattern={"gemma3": 6, "gemma2": 2, "gpt_oss": 2}.get(block, 1), paired=block == "gemma2",
                        routed_bias=block == "deepseek" and bool(m["routed_bias"]))


def hf_config(m: dict, where: str = "maxtext_config") -> dict:
    """The Hugging Face config.json of the model a merged MaxText config describes."""
    block = m["decoder_block"]
    if block not in BLOCKS:
        raise ConfigError(f"{where}: decoder_block={block!r} is not one jaxeval reads (known: {', '.join(BLOCKS)})")
    fixed = {"gpt_oss": _GPT_OSS_FIXED, "deepseek": _DEEPSEEK_FIXED}.get(block, _BLOCK_FIXED)
    for key, value in fixed.items():
        if m[key] != value:
            raise ConfigError(f"{where}: {key}={m[key]!r} is not supported for decoder_block={block} "
                              f"(jaxeval reads {key}={value!r} there)")
    if str(m["rope_type"]) == "yarn" and block not in ("gpt_oss", "deepseek"):
        raise ConfigError(f"{where}: rope_type=yarn is not supported for decoder_block={block}")
    acts = list(m["mlp_activations"])
    want = ["gelu", "linear"] if block in GEMMA else ["sigmoid", "linear"] if block == "gpt_oss" else ["silu", "linear"]
    if acts != want:
        raise ConfigError(f"{where}: mlp_activations={acts} is not supported for decoder_block={block} "
                          f"(jaxeval reads {want})")
    if bool(m["use_qk_norm"]) != (block in ("qwen3", "qwen3_moe")) and block != "gemma3":
        raise ConfigError(f"{where}: use_qk_norm={m['use_qk_norm']} is not supported for decoder_block={block}")
    for cap in ("final_logits_soft_cap", "attn_logits_soft_cap"):  # only Gemma 2's layers and head soft-cap
        if float(m[cap] or 0.0) and block != "gemma2":
            raise ConfigError(f"{where}: {cap}={m[cap]!r} is not supported for decoder_block={block} "
                              "(jaxeval reads soft caps for gemma2 only)")
    raw = {"model_type": BLOCKS[block], "hidden_size": m["base_emb_dim"],
           "num_attention_heads": m["base_num_query_heads"], "num_key_value_heads": m["base_num_kv_heads"],
           "head_dim": m["head_dim"], "intermediate_size": m["base_mlp_dim"],
           "num_hidden_layers": m["base_num_decoder_layers"], "vocab_size": m["vocab_size"],
           "rms_norm_eps": float(m["normalization_layer_epsilon"]), "rope_theta": float(m["rope_max_timescale"]),
           "tie_word_embeddings": bool(m["logits_via_embedding"]),
           "max_position_embeddings": int(m["max_position_embeddings"]), "hidden_act": "silu"}
    if style_of(m).rope_interleaved and m["rope_use_scale"]:  # LLaMARotaryEmbedding's fixed Llama 3.1 constants
        raw["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192}
    elif float(m["rope_linear_scaling_factor"]) != 1.0 and block != "gemma3":
        raw["rope_scaling"] = {"rope_type": "linear", "factor": float(m["rope_linear_scaling_factor"])}
    if block in ("mixtral", "qwen3_moe"):
        moe = m["base_moe_mlp_dim"] if m["base_moe_mlp_dim"] > 0 else m["base_mlp_dim"]
        raw.update(num_experts_per_tok=m["num_experts_per_tok"])
        if block == "mixtral":
            raw.update(num_local_experts=m["num_experts"], intermediate_size=moe)
        else:
            raw.update(num_experts=m["num_experts"], moe_intermediate_size=moe, norm_topk_prob=bool(m["norm_topk_prob"]),
                       decoder_sparse_step=1, mlp_only_layers=[])
    if block == "gemma3":
        _gemma3(raw, m, where)
    if block == "gemma2":
        _gemma2(raw, m, where)
    if block == "gpt_oss":
        _gpt_oss(raw, m, where)
    if block == "deepseek":
        _deepseek(raw, m, where)
    return raw


def _deepseek(raw: dict, m: dict, where: str) -> None:
    # maxtext/models/deepseek.py: first_num_dense_layers dense layers ("dense_layers"), then the MoE layers
    # ("moe_layers"); layers/moe.py deepseek_scale_weights: sigmoid scores renormalised over the top k, times
    # routed_scaling_factor; layers/attention_mla.py: softmax scale qk_head_dim**-0.5 x (0.1 mscale ln(rope_factor)
    # + 1)**2 when max_position_embeddings > original_max_position_embeddings
    if not m["q_lora_rank"]:
        raise ConfigError(f"{where}: decoder_block=deepseek with q_lora_rank=0 is DeepSeek-V2, which jaxeval does not "
                          "read (DeepSeek-V3: q_lora_rank > 0)")
    if m["base_num_kv_heads"] != m["base_num_query_heads"]:
        raise ConfigError(f"{where}: decoder_block=deepseek needs base_num_kv_heads = base_num_query_heads")
    long = int(m["max_position_embeddings"]) > int(m["original_max_position_embeddings"])
    groups, top_groups = int(m["n_routing_groups"]), int(m["topk_routing_group"])
    raw.update(first_k_dense_replace=int(m["first_num_dense_layers"]), n_routed_experts=m["num_experts"],
               num_experts_per_tok=m["num_experts_per_tok"], n_shared_experts=int(m["shared_experts"]),
               moe_intermediate_size=m["base_moe_mlp_dim"] if m["base_moe_mlp_dim"] > 0 else m["base_mlp_dim"],
               n_group=groups if groups > 0 else 1, topk_group=top_groups if groups > 0 else 1,
               routed_scaling_factor=float(m["routed_scaling_factor"]), norm_topk_prob=True,
               q_lora_rank=int(m["q_lora_rank"]), kv_lora_rank=int(m["kv_lora_rank"]),
               qk_nope_head_dim=int(m["qk_nope_head_dim"]), qk_rope_head_dim=int(m["qk_rope_head_dim"]),
               v_head_dim=int(m["v_head_dim"]), head_dim=int(m["qk_rope_head_dim"]),
               rope_interleave=bool(m["rope_interleave"]),
               rope_parameters={"rope_type": "yarn", "rope_theta": raw.pop("rope_theta"), "factor": float(m["rope_factor"]),
                                "beta_fast": float(m["beta_fast"]), "beta_slow": float(m["beta_slow"]),
                                "original_max_position_embeddings": int(m["original_max_position_embeddings"]),
                                "truncate": bool(m["rope_truncate"]), "mscale": float(m["mscale"]),
                                "mscale_all_dim": float(m["mscale"]) if long else 0.0, "attention_factor": 1.0})


def _gpt_oss(raw: dict, m: dict, where: str) -> None:
    # maxtext/models/gpt_oss.py: GPT_OSS_ATTENTION_PATTERN (sliding, global) repeated, scanned per pattern slot;
    # layers/embeddings.py YarnRotaryEmbedding: cos/sin x (0.1 ln(rope_factor) + 1) when rope_attention_scaling;
    # layers/moe.py: experts' GLU clipped at mlp_activations_limit, sigmoid(1.702 x) as in transformers' gpt-oss
    layers = raw["num_hidden_layers"]
    if layers % 2:
        raise ConfigError(f"{where}: decoder_block=gpt_oss needs an even base_num_decoder_layers (got {layers})")
    factor = float(m["rope_factor"])
    scaling = (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0) if m["rope_attention_scaling"] else 1.0
    moe = m["base_moe_mlp_dim"] if m["base_moe_mlp_dim"] > 0 else m["base_mlp_dim"]
    raw.update(num_local_experts=m["num_experts"], num_experts_per_tok=m["num_experts_per_tok"], intermediate_size=moe,
               sliding_window=int(m["sliding_window_size"]), attention_bias=True,
               layer_types=["sliding_attention", "full_attention"] * (layers // 2),
               swiglu_limit=float(m["mlp_activations_limit"]), swiglu_alpha=1.702,
               rope_parameters={"rope_type": "yarn", "rope_theta": raw.pop("rope_theta"), "factor": factor,
                                "beta_fast": float(m["beta_fast"]), "beta_slow": float(m["beta_slow"]),
                                "original_max_position_embeddings": int(m["original_max_position_embeddings"]),
                                "truncate": bool(m["rope_truncate"]), "attention_factor": scaling})


def _gemma2(raw: dict, m: dict, where: str) -> None:
    # maxtext/models/gemma2.py: each MaxText layer runs a sliding-window layer, then a global one
    # (configs/models/gemma2-*.yml count these pairs in base_num_decoder_layers); its attention scales no
    # query at run time, the converter folded 1/sqrt(head_dim) in: MaxText's model is query_pre_attn_scalar =
    # head_dim (equal to the Hugging Face model's for 2b and 9b; 27b's Hugging Face scalar is 144).
    if not m["sliding_window_size"]:
        raise ConfigError(f"{where}: decoder_block=gemma2 needs sliding_window_size > 0")
    pairs = raw["num_hidden_layers"]
    raw.update(num_hidden_layers=2 * pairs, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=m["head_dim"],
               sliding_window=int(m["sliding_window_size"]),
               layer_types=["sliding_attention", "full_attention"] * pairs,
               attn_logit_softcapping=float(m["attn_logits_soft_cap"]) or None,
               final_logit_softcapping=float(m["final_logits_soft_cap"]) or None)


def _gemma3(raw: dict, m: dict, where: str) -> None:
    # maxtext/models/gemma3.py: five sliding-window layers then one global, per scanned block;
    # get_query_pre_attn_scalar: head_dim**-0.5 (4b, 12b), (emb_dim // heads)**-0.5 (27b)
    if not m["sliding_window_size"]:
        raise ConfigError(f"{where}: decoder_block=gemma3 needs sliding_window_size > 0")
    layers = raw["num_hidden_layers"]
    scalar = (m["base_emb_dim"] // m["base_num_query_heads"] if m.get("model_name") == "gemma3-27b"
              else m["head_dim"])
    local = m["local_rope_max_timescale"] if m["local_rope_max_timescale"] > 0 else m["rope_max_timescale"]
    factor = float(m["rope_linear_scaling_factor"])
    raw.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=scalar,
               sliding_window=int(m["sliding_window_size"]),
               layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(layers)],
               rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": float(local)},
                                "full_attention": ({"rope_type": "linear", "factor": factor} if factor != 1.0
                                                   else {"rope_type": "default"})
                                | {"rope_theta": float(m["rope_max_timescale"])}},
               final_logit_softcapping=None, attn_logit_softcapping=None)
    raw.pop("rope_theta")


def as_maxtext_model(raw: dict, style: MaxTextStyle) -> dict:
    """A Hugging Face config.json read as the model MaxText runs from it: Gemma 2's attention scale is the one its
    converter folds into the query kernel, 1/sqrt(head_dim) (maxtext_config._gemma2), whatever the file's scalar."""
    if style.block != "gemma2":
        return raw
    return {**raw, "query_pre_attn_scalar": raw.get("head_dim") or raw["hidden_size"] // raw["num_attention_heads"]}


def style_from_hf(raw: dict, where: str) -> MaxTextStyle:
    """The MaxTextStyle of a checkpoint described by a Hugging Face config.json (the family MaxText converts it as)."""
    model_type = raw.get("model_type")
    if model_type == "gemma3":
        raw = raw.get("text_config") or {}
        model_type = "gemma3_text"
    blocks = {v: k for k, v in BLOCKS.items()}
    if model_type not in blocks:
        raise ConfigError(f"{where}: model_type={model_type!r} has no MaxText layout jaxeval reads "
                          f"(known: {', '.join(blocks)})")
    block = blocks[model_type]
    scaling = raw.get("rope_scaling") or raw.get("rope_parameters") or {}
    m = {**BASE, "decoder_block": block, "logits_via_embedding": bool(raw.get("tie_word_embeddings", False)),
         "normalize_embedding_logits": block in GEMMA, "routed_bias": True,  # DeepSeek-V3 always has the bias
         "rope_type": "llama3.1" if isinstance(scaling, dict) and scaling.get("rope_type") == "llama3" else "default"}
    return style_of(m)
