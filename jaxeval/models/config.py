"""ModelConfig: one frozen description of every supported decoder, read from a HF config.json.

Both config layouts on the hub are accepted: transformers v4 (`rope_theta`, `rope_scaling`,
`rope_local_base_freq`) and v5 (`rope_parameters`, per layer type for Gemma 3). Anything we
would silently compute differently from the reference is refused with the offending field.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

from jaxeval.errors import ConfigError

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text")
FULL, SLIDING = "full_attention", "sliding_attention"


@dataclasses.dataclass(frozen=True)
class RopeConfig:
    theta: float
    kind: str = "default"  # default | linear | llama3
    factor: float = 1.0
    low_freq_factor: float = 1.0  # llama3 only
    high_freq_factor: float = 4.0  # llama3 only
    original_max_position: int = 8192  # llama3 only


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    max_position_embeddings: int
    rms_norm_eps: float
    hidden_act: str  # silu | gelu_tanh
    tie_word_embeddings: bool
    layer_types: tuple[str, ...]  # FULL or SLIDING per layer
    rope: RopeConfig  # used by full-attention layers
    rope_local: RopeConfig  # used by sliding layers (same as `rope` outside Gemma 3)
    sliding_window: int | None = None
    qkv_bias: bool = False
    qk_norm: bool = False  # Qwen3, Gemma 3: RMSNorm over head_dim on q and k
    sandwich_norm: bool = False  # Gemma 2/3: post-attention and pre/post-feed-forward norms
    norm_plus_one: bool = False  # Gemma: RMSNorm scales by (1 + w)
    embed_scale: float = 1.0  # Gemma: sqrt(hidden_size)
    query_scale: float = 0.0  # multiplies q.k; 0 means head_dim ** -0.5
    attn_logit_softcap: float | None = None
    final_logit_softcap: float | None = None
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()

    def __post_init__(self):
        if len(self.layer_types) != self.num_layers:
            raise ConfigError(f"layer_types has {len(self.layer_types)} entries for {self.num_layers} layers")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(f"num_attention_heads={self.num_heads} is not a multiple of num_key_value_heads={self.num_kv_heads}")

    @property
    def attention_scale(self) -> float:
        return self.query_scale or self.head_dim ** -0.5

    @property
    def layer_windows(self) -> tuple[int, ...]:
        """Per-layer sliding window (0 = unlimited); a query at q sees keys k with q - k < window."""
        return tuple(self.sliding_window or 0 if t == SLIDING else 0 for t in self.layer_types)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModelConfig:
        d = dict(d)
        d["rope"], d["rope_local"] = RopeConfig(**d["rope"]), RopeConfig(**d["rope_local"])
        d["layer_types"], d["eos_token_ids"] = tuple(d["layer_types"]), tuple(d["eos_token_ids"])
        return cls(**d)


def load_hf_config(path: str | Path) -> ModelConfig:
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{file}: no config.json (expected a Hugging Face model folder)")
    try:
        raw = json.loads(file.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{file}: not valid JSON ({e})") from None
    return config_from_hf(raw, where=str(file))


def config_from_hf(raw: dict[str, Any], where: str = "config.json") -> ModelConfig:
    """Translate a HF config dict; `where` names the source in every error."""
    if "text_config" in raw and raw.get("model_type") == "gemma3":
        raw = {**raw["text_config"], "model_type": "gemma3_text"}
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(f"{where}: model_type={model_type!r} is not supported "
                          f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})")

    def need(key):
        if key not in raw or raw[key] is None:
            raise ConfigError(f"{where}: field {key!r} is missing (model_type={model_type})")
        return raw[key]

    def refuse(key, allowed, why):
        if raw.get(key) not in allowed:
            raise ConfigError(f"{where}: field {key!r}={raw.get(key)!r} is not supported ({why})")

    num_layers, num_heads = int(need("num_hidden_layers")), int(need("num_attention_heads"))
    hidden = int(need("hidden_size"))
    head_dim = int(raw.get("head_dim") or hidden // num_heads)
    gemma = model_type.startswith("gemma")
    refuse("pretraining_tp", (None, 1), "tensor-parallel pretraining slices")
    refuse("mlp_bias", (None, False), "biases on MLP projections")
    refuse("use_bidirectional_attention", (None, False), "bidirectional attention")
    if model_type in ("llama", "mistral"):
        refuse("attention_bias", (None, False), "q/k/v/o biases on this family")

    act = raw.get("hidden_activation") or raw.get("hidden_act") or "silu"
    acts = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_tanh": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{where}: field 'hidden_act'={act!r} is not supported ({', '.join(acts)})")

    layer_types = _layer_types(raw, model_type, num_layers, where)
    rope, rope_local = _rope(raw, model_type, where)
    window = raw.get("sliding_window") if SLIDING in layer_types else None
    if SLIDING in layer_types and not window:
        raise ConfigError(f"{where}: layer_types has sliding layers but field 'sliding_window' is {window!r}")

    eos = raw.get("eos_token_id")
    eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (int(eos),))
    qpas = raw.get("query_pre_attn_scalar")
    return ModelConfig(
        model_type=model_type,
        vocab_size=int(need("vocab_size")),
        hidden_size=hidden,
        intermediate_size=int(need("intermediate_size")),
        num_layers=num_layers,
        num_heads=num_heads,
        num_kv_heads=int(raw.get("num_key_value_heads") or num_heads),
        head_dim=head_dim,
        max_position_embeddings=int(need("max_position_embeddings")),
        rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
        hidden_act=acts[act],
        tie_word_embeddings=bool(raw.get("tie_word_embeddings", gemma)),
        layer_types=layer_types,
        rope=rope,
        rope_local=rope_local,
        sliding_window=int(window) if window else None,
        qkv_bias=model_type == "qwen2" or bool(raw.get("attention_bias")),
        qk_norm=model_type in ("qwen3", "gemma3_text"),
        sandwich_norm=gemma,
        norm_plus_one=gemma,
        embed_scale=math.sqrt(hidden) if gemma else 1.0,
        query_scale=float(qpas) ** -0.5 if gemma and qpas else 0.0,
        attn_logit_softcap=raw.get("attn_logit_softcapping") if model_type == "gemma2" else None,
        final_logit_softcap=raw.get("final_logit_softcapping") if gemma else None,
        bos_token_id=raw.get("bos_token_id"),
        eos_token_ids=eos_ids,
    )


def _layer_types(raw, model_type, num_layers, where) -> tuple[str, ...]:
    types = raw.get("layer_types")
    if types is None:
        if model_type == "mistral" and raw.get("sliding_window"):
            types = [SLIDING] * num_layers
        elif model_type == "gemma2":
            types = [SLIDING if (i + 1) % 2 else FULL for i in range(num_layers)]
        elif model_type == "gemma3_text":
            pattern = int(raw.get("sliding_window_pattern", 6))
            types = [SLIDING if (i + 1) % pattern else FULL for i in range(num_layers)]
        elif model_type in ("qwen2", "qwen3") and raw.get("use_sliding_window"):
            start = int(raw.get("max_window_layers", num_layers))
            types = [SLIDING if i >= start else FULL for i in range(num_layers)]
        else:
            types = [FULL] * num_layers
    if model_type == "mistral" and not raw.get("sliding_window"):
        types = [FULL] * num_layers  # transformers ignores layer_types when the window is null
    bad = [t for t in types if t not in (FULL, SLIDING)]
    if bad:
        raise ConfigError(f"{where}: field 'layer_types' has unsupported entry {bad[0]!r}")
    if len(types) != num_layers:
        raise ConfigError(f"{where}: field 'layer_types' has {len(types)} entries, num_hidden_layers={num_layers}")
    return tuple(types)


def _rope_from(params: dict | None, theta_default: float | None, where: str, field: str) -> RopeConfig:
    params = dict(params or {})
    theta = params.get("rope_theta", theta_default)
    if theta is None:
        raise ConfigError(f"{where}: field 'rope_theta' is missing")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "default":
        return RopeConfig(theta=float(theta))
    if kind == "linear":
        return RopeConfig(theta=float(theta), kind="linear", factor=float(params["factor"]))
    if kind == "llama3":
        return RopeConfig(theta=float(theta), kind="llama3", factor=float(params["factor"]),
                          low_freq_factor=float(params["low_freq_factor"]),
                          high_freq_factor=float(params["high_freq_factor"]),
                          original_max_position=int(params["original_max_position_embeddings"]))
    raise ConfigError(f"{where}: field {field!r} has rope_type={kind!r}, which jaxeval does not support "
                      "(supported: default, linear, llama3)")


def _rope(raw, model_type, where) -> tuple[RopeConfig, RopeConfig]:
    params = raw.get("rope_parameters")
    theta = raw.get("rope_theta", 10000.0)
    if model_type == "gemma3_text":
        if params and FULL in params:  # transformers v5: one entry per layer type
            return (_rope_from(params[FULL], None, where, "rope_parameters.full_attention"),
                    _rope_from(params[SLIDING], None, where, "rope_parameters.sliding_attention"))
        full = _rope_from(raw.get("rope_scaling"), theta, where, "rope_scaling")
        local = RopeConfig(theta=float(raw.get("rope_local_base_freq", 10000.0)))
        return full, local
    if params is not None:
        rope = _rope_from(params, theta, where, "rope_parameters")
    else:
        rope = _rope_from(raw.get("rope_scaling"), theta, where, "rope_scaling")
    return rope, rope
