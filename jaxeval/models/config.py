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
from jaxeval.models import families
from jaxeval.models.families import (FULL, GEMMA3_TEXT_DEFAULTS, PARTIAL_ROTARY_TYPES,  # noqa: F401 (re-exported)
                                     PER_LAYER_TYPE_ROPE, SLIDING, SUPPORTED_MODEL_TYPES)
from jaxeval.models.families import number as _number
from jaxeval.models.gated_delta import GDNDims
from jaxeval.models.mla import MLADims
from jaxeval.models.moe import MoESpec


ROPE_KINDS = ("default", "linear", "llama3", "yarn", "dynamic", "longrope")


@dataclasses.dataclass(frozen=True)
class RopeConfig:
    """One rope, as transformers' rope_parameters describe it, with every derived value resolved."""
    theta: float
    kind: str = "default"  # one of ROPE_KINDS
    factor: float = 1.0  # linear, llama3, yarn, dynamic
    low_freq_factor: float = 1.0  # llama3
    high_freq_factor: float = 4.0  # llama3
    # llama3, yarn, longrope: the pretraining context; dynamic: max_position_embeddings (its threshold)
    original_max_position: int = 8192
    beta_fast: float = 32.0  # yarn
    beta_slow: float = 1.0  # yarn
    truncate: bool = True  # yarn: round the correction range outward (gpt-oss sets false)
    attention_factor: float = 1.0  # multiplies cos and sin (yarn's mscale, longrope's scaling)
    short_factor: tuple[float, ...] = ()  # longrope, one per frequency
    long_factor: tuple[float, ...] = ()  # longrope, used once the sequence passes original_max_position


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    model_type: str
    vocab_size: int
    hidden_size: int
    intermediate_size: int  # the dense MLP's width (Qwen3.5-MoE: its shared expert's)
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
    o_bias: bool = False  # gpt-oss: o_proj has a bias too
    attention_sinks: bool = False  # gpt-oss: a learned logit per query head joins each softmax (no value)
    qk_norm: bool = False  # Qwen3, Gemma 3: RMSNorm over head_dim on q and k
    qk_norm_over_heads: bool = False  # OLMo 2/3: the q/k RMSNorm spans all heads' concatenated dims
    pre_norm: bool = True  # RMSNorm before attention and MLP (OLMo 2/3: none, post norms only)
    sandwich_norm: bool = False  # Gemma 2/3, GLM-4, OLMo 2/3: RMSNorm on the attention and MLP outputs too
    norm_plus_one: bool = False  # Gemma: RMSNorm scales by (1 + w)
    norm_scale_float32: bool = False  # OLMo 2/3: RMSNorm multiplies by w before the cast back (Llama after)
    embed_scale: float = 1.0  # Gemma: sqrt(hidden_size); Granite: embedding_multiplier
    query_scale: float = 0.0  # multiplies q.k; 0 means head_dim ** -0.5 (Granite: attention_multiplier)
    residual_scale: float = 1.0  # Granite: residual_multiplier on each attention and MLP output
    logits_scaling: float = 1.0  # Granite: logits are divided by it
    query_scale_beta: float = 0.0  # Ministral 3: q *= 1 + beta * log(1 + floor(position / query_scale_span))
    query_scale_span: int = 0
    attn_logit_softcap: float | None = None
    final_logit_softcap: float | None = None
    bos_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    rotary_dim: int = 0  # leading dims of each head that rotate (partial_rotary_factor); 0: all of head_dim
    rope_interleaved: bool = False  # pairs (2i, 2i + 1) rotate together (GLM) instead of (i, i + R/2)
    no_rope_layers: tuple[int, ...] = ()  # layers without positional rotation (NoPE)
    # hybrids (Qwen3.5): the Gated DeltaNet sizes of the LINEAR layers, and full attention whose output is
    # multiplied by sigmoid(gate), the gate a second query projection
    linear_attention: GDNDims | None = None
    attention_output_gate: bool = False
    # mixture of experts (Qwen3-MoE): every layer's MLP is the routed experts' (jaxeval.models.moe)
    moe: MoESpec | None = None
    moe_intermediate_size: int = 0  # each expert's width
    shared_expert_intermediate_size: int = 0  # DeepSeek-V3: the shared experts' width (moe width x n_shared_experts)
    # the first dense_layers layers have the dense MLP, the rest the MoE (jaxeval.models.layer_stacks)
    dense_layers: int = 0
    # DeepSeek-V3's multi-head latent attention (jaxeval.models.mla): then num_kv_heads is 1 and head_dim the
    # cached [k_rope, c_kv] width, rotary dims first
    mla: MLADims | None = None

    def __post_init__(self):
        if len(self.layer_types) != self.num_layers:
            raise ConfigError(f"layer_types has {len(self.layer_types)} entries for {self.num_layers} layers")
        if self.num_heads % self.num_kv_heads:
            raise ConfigError(f"num_attention_heads={self.num_heads} is not a multiple of num_key_value_heads={self.num_kv_heads}")
        if self.rotary_dim == 0:
            object.__setattr__(self, "rotary_dim", self.head_dim)
        if self.dense_layers and (self.moe is None or not 0 < self.dense_layers < self.num_layers):
            raise ConfigError(f"dense_layers={self.dense_layers} needs a MoE model of more layers than that")
        if self.qk_norm_over_heads and not self.qk_norm:
            raise ConfigError("qk_norm_over_heads needs qk_norm")
        if self.rotary_dim % 2 or not 0 < self.rotary_dim <= self.head_dim:
            raise ConfigError(f"rotary dimension {self.rotary_dim} must be even and within head_dim={self.head_dim}")
        for rope in (self.rope, self.rope_local):
            if rope.kind == "longrope" and not len(rope.short_factor) == len(rope.long_factor) == self.rotary_dim // 2:
                raise ConfigError(f"longrope short_factor/long_factor have {len(rope.short_factor)}/"
                                  f"{len(rope.long_factor)} entries; the rotary dimension {self.rotary_dim} needs "
                                  f"{self.rotary_dim // 2}")

    @property
    def context_limit(self) -> int:
        """The longest sequence jaxeval runs: max_position_embeddings, or for dynamic NTK (which exists to
        run past it) max_position_embeddings * factor."""
        if self.rope.kind == "dynamic":
            return int(self.max_position_embeddings * self.rope.factor)
        return self.max_position_embeddings

    @property
    def context_source(self) -> str:
        """Where context_limit comes from, for error messages."""
        if self.rope.kind == "dynamic":
            return (f"{self.context_limit} = max_position_embeddings={self.max_position_embeddings} x dynamic NTK "
                    f"factor {self.rope.factor:g}")
        return f"max_position_embeddings={self.max_position_embeddings}"

    @property
    def attention_scale(self) -> float:
        return self.query_scale or self.head_dim ** -0.5

    @property
    def value_dim(self) -> int:
        """Width of the cached values: head_dim, or 0 under latent attention (its values are the keys)."""
        return 0 if self.mla is not None else self.head_dim

    @property
    def layer_windows(self) -> tuple[int, ...]:
        """Per-layer sliding window (0 = unlimited); a query at q sees keys k with q - k < window."""
        return tuple(self.sliding_window or 0 if t == SLIDING else 0 for t in self.layer_types)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ModelConfig:
        d = dict(d)
        d.pop("kv_cache", None)  # a run setting (jaxeval.engine.runtime.Runtime) that configs saved before held
        d["rope"], d["rope_local"] = (RopeConfig(**{**r, "short_factor": tuple(r.get("short_factor", ())),
                                                    "long_factor": tuple(r.get("long_factor", ()))})
                                      for r in (d["rope"], d["rope_local"]))
        for key in ("layer_types", "eos_token_ids", "no_rope_layers"):
            d[key] = tuple(d.get(key, ()))
        if d.get("linear_attention") is not None:
            d["linear_attention"] = GDNDims(**d["linear_attention"])
        if d.get("moe") is not None:
            d["moe"] = MoESpec(**d["moe"])
        if d.get("mla") is not None:
            d["mla"] = MLADims(**d["mla"])
        return cls(**d)


# config.json fields a user may override at load time (how model cards enable long context: YaRN over
# 32k, a larger max_position_embeddings), from load_model(**overrides), --model_args or the run YAML.
CONFIG_OVERRIDES = ("rope_scaling", "rope_parameters", "rope_theta", "max_position_embeddings",
                    "original_max_position_embeddings", "partial_rotary_factor", "sliding_window")


def check_overrides(overrides: dict[str, Any] | None, where: str = "model overrides") -> dict[str, Any]:
    """The overrides as a plain dict, each key one of CONFIG_OVERRIDES."""
    overrides = dict(overrides or {})
    for key in overrides:
        if key not in CONFIG_OVERRIDES:
            raise ConfigError(f"{where}: {key!r} is not a config.json field jaxeval lets you override "
                              f"(overridable: {', '.join(CONFIG_OVERRIDES)})")
    return overrides


def override_value(key: str, value, where: str = "--model_args"):
    """A config.json override given as text (k=v): JSON text parsed, other values as they are."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise ConfigError(f"{where}: {key}={value} is not a JSON value (a number, true/false, null or "
                          "an object such as {\"rope_type\": \"yarn\", ...})") from None
    except RecursionError:
        raise ConfigError(f"{where}: {key}: JSON nested too deeply to read") from None


def load_hf_config(path: str | Path, overrides: dict[str, Any] | None = None) -> ModelConfig:
    """The ModelConfig of a model folder (or config.json), with `overrides` replacing config.json fields."""
    path = Path(path)
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{file}: no config.json (expected a Hugging Face model folder)")
    from jaxeval.io.inputs import read_json

    raw = read_json(file, ConfigError)
    return config_from_hf(raw, where=str(file), overrides=overrides)


def config_from_hf(raw: dict[str, Any], where: str = "config.json", overrides: dict[str, Any] | None = None
                   ) -> ModelConfig:
    """Translate a HF config dict; `where` names the source in every error. overrides: see CONFIG_OVERRIDES
    (for a multimodal Gemma 3 they apply to its text tower)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    overrides = check_overrides(overrides)
    raw = families.text_tower(raw, where)  # multimodal Gemma 3 and Mistral 3: read their text tower
    if overrides:
        raw = {**raw, **overrides}
        where = f"{where} with overrides of {', '.join(sorted(overrides))}"
    model_type = raw.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ConfigError(f"{where}: model_type={model_type!r} is not supported "
                          f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})")
    raw = families.with_class_defaults(raw, model_type)

    def need(key):
        if key not in raw or raw[key] is None:
            raise ConfigError(f"{where}: field {key!r} is missing (model_type={model_type})")
        return raw[key]

    def size(key, value=None):
        """A positive int field (`value` when given, else the required field `key`)."""
        value = need(key) if value is None else value
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where}: field {key!r}={value!r} must be a positive integer")
        return value

    def refuse(key, allowed, why):
        if raw.get(key) not in allowed:
            raise ConfigError(f"{where}: field {key!r}={raw.get(key)!r} is not supported ({why})")

    num_layers, num_heads = size("num_hidden_layers"), size("num_attention_heads")
    hidden = size("hidden_size")
    head_dim = size("head_dim", raw.get("head_dim") or hidden // num_heads)
    num_kv_heads = size("num_key_value_heads", raw.get("num_key_value_heads") or num_heads)
    vocab_size, intermediate = size("vocab_size"), size(families.dense_mlp_field(model_type))
    max_positions = size("max_position_embeddings")
    if num_heads % num_kv_heads:
        raise ConfigError(f"{where}: field 'num_attention_heads'={num_heads} is not a multiple of "
                          f"'num_key_value_heads'={num_kv_heads}")
    gemma = model_type.startswith("gemma")
    if model_type not in families.IGNORES_PRETRAINING_TP:
        refuse("pretraining_tp", (None, 1), "tensor-parallel pretraining slices")
    refuse("mlp_bias", (None, False), "biases on MLP projections")
    refuse("use_bidirectional_attention", (None, False), "bidirectional attention")
    bias = families.bias_fields(raw, model_type, where)
    rotary_dim = _rotary_dim(raw, model_type, head_dim, where)

    act = raw.get("hidden_activation") or raw.get("hidden_act") or "silu"
    acts = {"silu": "silu", "gelu_pytorch_tanh": "gelu_tanh", "gelu_tanh": "gelu_tanh"}
    if act not in acts:
        raise ConfigError(f"{where}: field 'hidden_act'={act!r} is not supported ({', '.join(acts)})")

    layer_types = families.layer_types(raw, model_type, num_layers, where)
    rope, rope_local = _rope(raw, model_type, where)
    window = raw.get("sliding_window") if SLIDING in layer_types else None
    if SLIDING in layer_types and not window:
        raise ConfigError(f"{where}: layer_types has sliding layers but field 'sliding_window' is {window!r}")

    eos = raw.get("eos_token_id")
    eos_ids = tuple(eos) if isinstance(eos, list) else (() if eos is None else (int(eos),))
    sliding = size("sliding_window", window) if window else None
    layer_fields = families.family_fields(raw, model_type, hidden, where, rope)
    nope = families.no_rope_layers(raw, model_type, num_layers, where, layer_types)
    eps = _number(raw.get("rms_norm_eps", 1e-6), where, "rms_norm_eps")
    try:  # the dataclass's own checks (e.g. longrope factors vs the rotary dim) get the file's name too
        fields = dict(
            model_type=model_type,
            vocab_size=vocab_size,
            hidden_size=hidden,
            intermediate_size=intermediate,
            num_layers=num_layers,
            num_heads=num_heads,
            num_kv_heads=num_kv_heads,
            head_dim=head_dim,
            max_position_embeddings=max_positions,
            rms_norm_eps=eps,
            hidden_act=acts[act],
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", gemma)),
            layer_types=layer_types,
            rope=rope,
            rope_local=rope_local,
            sliding_window=sliding,
            bos_token_id=raw.get("bos_token_id"),
            eos_token_ids=eos_ids,
            rotary_dim=rotary_dim,
            no_rope_layers=nope,
            **bias,
        )
        return ModelConfig(**fields | layer_fields)  # a family may replace the common reading (DeepSeek-V3's heads)
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from None


def _rotary_dim(raw, model_type, head_dim, where) -> int:
    """int(head_dim * partial_rotary_factor), as transformers; refused for families that rotate whole heads."""
    key = "rope_scaling" if raw.get("rope_scaling") is not None else "rope_parameters"
    params = raw.get(key) if isinstance(raw.get(key), dict) else {}
    if isinstance(params.get(FULL), dict):  # per layer type: every entry has the same rotary dim
        params = params[FULL]
    # transformers: the rope dict's own value first, then the top-level field
    field = f"{key}.partial_rotary_factor" if "partial_rotary_factor" in params else "partial_rotary_factor"
    factor = params.get("partial_rotary_factor", raw.get("partial_rotary_factor"))
    if factor in (None, 1, 1.0):
        return head_dim
    factor = _number(factor, where, field)
    if model_type not in PARTIAL_ROTARY_TYPES:
        raise ConfigError(f"{where}: field {field!r}={factor!r} is not supported for model_type={model_type!r} "
                          "(transformers rotates whole heads in this family)")
    dim = int(head_dim * factor)
    if dim < 2 or dim % 2:
        raise ConfigError(f"{where}: field {field!r}={factor!r} gives a rotary dimension of {dim} "
                          f"(head_dim={head_dim}); it must be even and at least 2")
    return dim


def _rope_from(params: dict | None, theta_default: float | None, raw: dict, where: str, field: str) -> RopeConfig:
    """One rope entry (v4 `rope_scaling` or v5 `rope_parameters`) with every derived value resolved as
    transformers' rope init functions resolve it; anything else is refused naming the field."""
    if params is not None and not isinstance(params, dict):
        raise ConfigError(f"{where}: field {field!r} must be an object, got {params!r}")
    params = dict(params or {})
    theta = params.get("rope_theta", theta_default)
    if theta is None:
        raise ConfigError(f"{where}: field 'rope_theta' is missing")
    theta = _number(theta, where, f"{field}.rope_theta" if "rope_theta" in params else "rope_theta")
    if not theta > 0:  # a zero or negative base gives NaN or infinite frequencies, never an error
        raise ConfigError(f"{where}: field 'rope_theta'={theta!r} must be positive")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind not in ROPE_KINDS:
        raise ConfigError(f"{where}: field {field!r} has rope_type={kind!r}, which jaxeval does not support "
                          f"(supported: {', '.join(ROPE_KINDS)})")
    max_positions = raw.get("max_position_embeddings")

    def number(key, default=None):
        value = params.get(key, default)
        if value is None:
            raise ConfigError(f"{where}: field {field!r} (rope_type={kind!r}) is missing {key!r}")
        value = _number(value, where, f"{field}.{key}")
        if key == "factor" and not value > 0:  # a scaling factor stretches positions: only positive ones do
            raise ConfigError(f"{where}: field '{field}.factor'={value!r} must be positive")
        return value

    def original() -> int:
        # transformers gives a top-level original_max_position_embeddings priority (Phi-3 keeps it there)
        value = raw.get("original_max_position_embeddings") or params.get("original_max_position_embeddings")
        value = value if value is not None else max_positions
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1 or value != int(value):
            raise ConfigError(f"{where}: field {field!r} (rope_type={kind!r}) needs a positive integer "
                              f"'original_max_position_embeddings', got {value!r}")
        return int(value)

    if kind == "default":
        return RopeConfig(theta=theta)
    if kind == "linear":
        return RopeConfig(theta=theta, kind=kind, factor=number("factor"))
    if kind == "llama3":
        return RopeConfig(theta=theta, kind=kind, factor=number("factor"), low_freq_factor=number("low_freq_factor"),
                          high_freq_factor=number("high_freq_factor"),
                          original_max_position=int(number("original_max_position_embeddings")))
    if kind == "dynamic":  # transformers scales past max_position_embeddings, not an original context
        return RopeConfig(theta=theta, kind=kind, factor=number("factor"),
                          original_max_position=int(_number(max_positions, where, "max_position_embeddings")))
    orig = original()
    # DeepSeek-V3 and Phi-3 may leave `factor` out: the ratio of the two contexts stands in
    factor = number("factor", max_positions / orig if params.get("factor") is None and max_positions else None)
    if kind == "yarn":
        attention = params.get("attention_factor")
        if attention is None:
            mscale, mscale_all = params.get("mscale"), params.get("mscale_all_dim")
            if mscale and mscale_all:
                attention = _yarn_mscale(factor, number("mscale")) / _yarn_mscale(factor, number("mscale_all_dim"))
            else:
                attention = _yarn_mscale(factor)
        truncate = params.get("truncate", True)
        if not isinstance(truncate, bool):
            raise ConfigError(f"{where}: field {field!r}.truncate={truncate!r} must be true or false")
        return RopeConfig(theta=theta, kind=kind, factor=factor, original_max_position=orig,
                          beta_fast=_number(params.get("beta_fast") or 32, where, f"{field}.beta_fast"),
                          beta_slow=_number(params.get("beta_slow") or 1, where, f"{field}.beta_slow"),
                          truncate=truncate, attention_factor=_number(attention, where, f"{field}.attention_factor"))
    # longrope
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(orig))
    factors = {}
    for key in ("short_factor", "long_factor"):
        values = params.get(key)
        if not isinstance(values, list) or not values or any(
                isinstance(v, bool) or not isinstance(v, (int, float)) for v in values):
            raise ConfigError(f"{where}: field {field!r}.{key} must be a non-empty list of numbers, got {values!r}")
        factors[key] = tuple(float(v) for v in values)
    return RopeConfig(theta=theta, kind=kind, factor=factor, original_max_position=orig,
                      attention_factor=_number(attention, where, f"{field}.attention_factor"), **factors)


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _rope(raw, model_type, where) -> tuple[RopeConfig, RopeConfig]:
    params = raw.get("rope_parameters")
    theta = raw.get("rope_theta", 10000.0)
    if model_type in PER_LAYER_TYPE_ROPE:
        # v4: rope_scaling applies to the full-attention layers only. Gemma 3's local layers have their own
        # base (rope_local_base_freq, default 1e4; global default 1e6). Olmo3Config gives its sliding layers
        # the class default theta even when a v4 file sets rope_theta (its rope_theta is read once, for the
        # full layers), so a v4 Olmo 3 file's sliding layers rotate with 5e5 whatever rope_theta says.
        if model_type == "gemma3_text":
            theta = raw.get("rope_theta", 1_000_000.0)
            local_theta, local_field = raw.get("rope_local_base_freq", 10_000.0), "rope_local_base_freq"
        else:
            local_theta, local_field = families.CLASS_DEFAULTS["olmo3"]["rope_theta"], "rope_theta"
        if isinstance(params, dict) and (FULL in params or SLIDING in params):  # v5: one entry per layer type
            return (_rope_from(params.get(FULL), theta, raw, where, "rope_parameters.full_attention"),
                    _rope_from(params.get(SLIDING), local_theta, raw, where, "rope_parameters.sliding_attention"))
        full = _rope_from(raw.get("rope_scaling"), theta, raw, where, "rope_scaling")
        local = RopeConfig(theta=_number(local_theta, where, local_field))
        return full, local
    scaling = raw.get("rope_scaling")
    if scaling is not None:  # transformers: rope_scaling, when given, replaces rope_parameters
        if isinstance(params, dict) and "rope_theta" in params and "rope_theta" not in raw:
            theta = params["rope_theta"]
        rope = _rope_from(scaling, theta, raw, where, "rope_scaling")
    else:
        rope = _rope_from(params, theta, raw, where, "rope_parameters")
    return rope, rope
