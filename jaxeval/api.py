"""The public Python surface: load_model() and the Model it returns (the checkpoint formats and the
loader it calls: jaxeval.weights)."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxeval.engine.backend import LanguageModel, SharedReads
from jaxeval.engine.compile_cache import enable_compile_cache
from jaxeval.engine.distributed import initialize_distributed
from jaxeval.engine.runtime import Runtime
from jaxeval.errors import ConfigError
from jaxeval.models.attention import BACKENDS, check_attention
from jaxeval.models.config import ModelConfig, check_overrides
from jaxeval.models.decoder import Decoder
from jaxeval.models.hybrid import HybridDecoder
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.models.kv_policy import KVPolicy, check_policy, check_supported, from_flags
from jaxeval.models.mesh import make_mesh
from jaxeval.models.param_layout import param_axes, param_shapes
from jaxeval.options.model import ModelOptions as CLI  # its class attributes are the flags' defaults
from jaxeval.models.quant import check_quantize
from jaxeval.models.sharding import check_mesh_fits, param_shardings
from jaxeval.weights.gguf_weights import load_gguf_tokenizer
from jaxeval.weights.loader import (DTYPES, default_dtype, fingerprint, generation_eos_ids, load_params,
                                    load_tokenizer_from, read_config, resolve_model_path)
from jaxeval.weights.maxtext import is_maxtext, load_maxtext_tokenizer, maxtext_fingerprint, open_maxtext
from jaxeval.weights.maxtext_params import load_maxtext_params


@dataclasses.dataclass
class Model(LanguageModel):
    """A loaded model: the Flax NNX module, its tokenizer (optional) and how it runs (runtime)."""

    module: Decoder
    tokenizer: object | None
    path: str
    dtype: str
    fingerprint: str  # identifies weights + config + dtype (journals key results on it)
    runtime: Runtime | None = None  # attention, prefill chunk, dtype, mesh, KV policy; None: Runtime(dtype=dtype)
    config_overrides: dict = dataclasses.field(default_factory=dict)  # config.json fields replaced at load
    quantization: str | None = None  # "int8", "int4-g128", "fp8": weights quantized at load (jaxeval.models.quant)
    generation_eos_ids: tuple[int, ...] = ()  # generation_config.json's eos_token_id (one id or a list)

    def __post_init__(self):
        if self.runtime is None:
            self.runtime = Runtime(dtype=self.dtype)
        if self.runtime.dtype != self.dtype:  # the weights' dtype is the activations' and caches'
            raise ValueError(f"Model: runtime.dtype={self.runtime.dtype!r} differs from dtype={self.dtype!r}")
        self._params = self.module.params()
        self.stats = {"reads": 0, "tokens": 0}  # sequences read and input tokens run through the trunk

    @property
    def config(self) -> ModelConfig:
        return self.module.config

    @property
    def attention(self) -> str:
        return self.runtime.attention

    @property
    def prefill_chunk(self) -> int:
        return self.runtime.prefill_chunk

    @property
    def mesh(self):
        """The jax.sharding.Mesh the weights are sharded over (None: one device)."""
        return self.runtime.mesh

    @property
    def kv_cache(self) -> str | None:
        """The KV-cache policy's label (jaxeval.models.kv_policy); None: the exact cache."""
        return self.runtime.kv_cache.label if self.runtime.kv_cache is not None else None

    def read_many(self, requests, *, batch_size: int = 1, share_prefixes: bool = True) -> SharedReads:
        """Teacher-forced reads of (ids, positions, tokens) requests (jaxeval.engine.backend.LanguageModel):
        requests sharing a token prefix run it once (share_prefixes), the others batch_size per step
        (jaxeval.engine.prefix_reuse.read_many)."""
        from jaxeval.engine.prefix_reuse import read_many

        shared = read_many(self._params, self.config, self.runtime, list(requests), batch_size=batch_size,
                           share_prefixes=share_prefixes)
        self.stats["reads"] += len(shared.results)
        self.stats["tokens"] += shared.tokens_run
        return shared

    def read_args(self) -> dict:
        """What the engine's read functions take from this model (jaxeval.engine.compare)."""
        return {"params": self._params, "config": self.config, "runtime": self.runtime, "path": self.path}

    def compare(self, reference: "Model", ids, positions) -> dict:
        """Per read position p: this model's log p(ids[p]) and top-1 hit, the reference's top-1 hit,
        top-1 agreement and KL(reference || model) over the whole vocabulary (jaxeval.engine.compare)."""
        from jaxeval.engine.compare import compare_reads

        result = compare_reads(self.read_args(), reference.read_args(), ids, positions)
        for model in (self, reference):
            model.stats["reads"] += 1
            model.stats["tokens"] += int(np.max(positions))
        return result

    def final_states(self, ids, rows):
        """float32 [K, D]: the final-norm hidden state at each token index of rows in ids (jaxeval.engine.states)."""
        from jaxeval.engine.states import final_states

        return final_states(self._params, self.config, self.runtime, ids, rows)

    @property
    def eos_token_ids(self) -> frozenset[int]:
        """The ids that end a generation: config.json's, generation_config.json's and the tokenizer's eos."""
        ids = set(self.config.eos_token_ids) | set(self.generation_eos_ids)
        if getattr(self.tokenizer, "eos_token_id", None) is not None:
            ids.add(int(self.tokenizer.eos_token_id))
        return frozenset(ids)

    def generate(self, prompts, max_new_tokens: int, stop=None, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, *, stop_token_ids=None, min_new_tokens: int = 0, batch_size: int = 8):
        """Generate after each token-id prompt -> list of jaxeval.engine.generate.Generation, in prompt
        order (jaxeval.engine.backend.LanguageModel.generate).

        Stops at eos_token_ids, at stop_token_ids, at the first of the stop strings (the text is cut
        before it) or after max_new_tokens; no EOS or stop id is chosen before min_new_tokens.
        temperature 0 is greedy; sampling is reproducible from the seed. See jaxeval.engine.generate.generate.
        """
        from jaxeval.engine.generate import generate as engine_generate

        return engine_generate(self._params, self.config, self.runtime, prompts, max_new_tokens, stop=stop,
                               temperature=temperature, top_p=top_p, seed=seed, tokenizer=self.tokenizer,
                               eos_token_ids=self.eos_token_ids, stop_token_ids=stop_token_ids,
                               min_new_tokens=min_new_tokens, batch_size=batch_size)


def load_model(path: str | Path, dtype: str = CLI.dtype, *, attention: str = CLI.attention,
               prefill_chunk: int = CLI.prefill_chunk, load_tokenizer: bool = True, mesh=CLI.mesh, lm_head: bool = True,
               quantize: str | None = CLI.quantize, quant_group: int = CLI.quant_group, dequantize: bool = CLI.dequantize,
               kv_cache: KVPolicy | str | None = CLI.kv_cache, maxtext_config=CLI.maxtext_config,
               config: str | Path | None = CLI.model_config, tokenizer: str | None = CLI.tokenizer,
               mapping=CLI.mapping, **config_overrides) -> Model:
    """Load a HF safetensors folder, a jaxeval Orbax checkpoint folder, or a hub id (when online).

    The defaults are the command line's (jaxeval.options.model.ModelOptions): dtype "auto" is float32
    on CPU and bfloat16 on accelerators.

    config_overrides replace config.json fields, as model cards enable long context, e.g.
    load_model(path, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    max_position_embeddings=131072); the fields allowed are jaxeval.models.config.CONFIG_OVERRIDES.

    mesh: None (one device), a spec such as "data=2,tensor=2,context=2" or "auto", or a
    jax.sharding.Mesh with axes ("data", "fsdp", "expert", "tensor", "context"); see jaxeval.models.mesh.
    quantize: "int8" (per channel), "int4" (symmetric, quant_group rows per scale) or "fp8" (e4m3 per
    channel): every matmul weight is rounded to it at load and held so on the device, rebuilt inside
    the jitted matmuls (jaxeval.models.quant); the embedding and the norms stay in dtype.
    A GGUF checkpoint's block-quantized matmul weights stay in their codes on the device the same
    way (jaxeval.weights.gguf_quantized; quantization "gguf-blocks"), unless dequantize=True or with
    quantize, when every tensor is dequantized at load as transformers does. On a mesh, quantized
    weights are sharded along their dense weight's logical axes (jaxeval.weights.quant_sharding).
    kv_cache: a KV-cache policy for reads and generation (jaxeval.models.kv_policy): "int8", "fp8",
    "streaming", "snapkv" (their default settings) or a KVPolicy; None or "exact": the exact cache.
    It is recorded (Model.kv_cache) and part of the fingerprint.
    A MaxText checkpoint (a run's <step> or <step>/items folder, a converter's output; local or gs://) takes its
    shape from maxtext_config (MaxText's overrides as its command line takes them, "model_name=llama3.1-8b
    scan_layers=True ...", or a run's YAML path first) or config (a Hugging Face config.json), and its tokenizer
    from tokenizer, MaxText's tokenizer_path or the config's folder (jaxeval.weights.maxtext; docs/maxtext.md).
    mapping: another trainer's parameter tree read through a declarative mapping (a YAML / JSON file, a
    dict, or a built-in's name such as "easydel"; jaxeval.weights.mapping): the folder holds its config.json
    and the tree (an Orbax PyTree checkpoint, or EasyDeL's save_pretrained folder).
    lm_head=False: a trunk-only checkpoint (a sentence-embedding model): no LM head is read and the
    embedding stands in for it, so only final_states() means anything.
    The weights are read straight into their shardings (jaxeval.models.sharding), each process
    reading only its own bytes. A multi-process run is joined first when the JAXEVAL_COORDINATOR /
    JAXEVAL_NUM_PROCESSES / JAXEVAL_PROCESS_ID (or JAXEVAL_DISTRIBUTED=1) variables are set.
    """
    if dtype != "auto" and dtype not in DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported (choose auto, {', '.join(DTYPES)})")
    if attention not in BACKENDS:
        raise ConfigError(f"attention={attention!r} is not supported (choose {', '.join(BACKENDS)})")
    quantization = check_quantize(quantize, quant_group)
    enable_compile_cache()  # before anything compiles (jaxeval/engine/compile_cache.py; JAXEVAL_COMPILE_CACHE=off)
    initialize_distributed()
    if dtype == "auto":  # after joining a multi-process run: asking for the platform touches devices
        dtype = default_dtype()
    config_overrides = check_overrides(config_overrides, "load_model")
    maxtext = open_maxtext(path, maxtext_config, config, config_overrides) if is_maxtext(path) else None
    if maxtext is None and (maxtext_config is not None or config is not None):
        raise ConfigError(f"{path}: maxtext_config= and config= are for MaxText checkpoints, and this is none "
                          "(no items/_METADATA)")
    if maxtext:
        folder, gguf, source, config = Path(maxtext.tree.items), None, None, maxtext.config
    else:
        folder = resolve_model_path(path)
        gguf, source, config = read_config(folder, config_overrides)
    if not lm_head:
        config = dataclasses.replace(config, tie_word_embeddings=True)
    check_attention(attention, config, dtype)  # backend vs platform, dtype, windows, soft-cap
    policy = check_policy(kv_cache) if isinstance(kv_cache, KVPolicy) else from_flags(kv_cache)
    check_supported(policy, config, mesh, attention)
    kv_label = policy.label if policy else None
    targets = None
    if mesh is not None:
        mesh = make_mesh(mesh, num_heads=config.num_heads, num_kv_heads=config.num_kv_heads,
                         context_parallel=not is_hybrid(config))
        check_mesh_fits(config, mesh, prefill_chunk)
        targets = param_shardings(param_shapes(config), mesh, param_axes(config))
    mapped = None
    if maxtext:
        if quantization:
            raise ConfigError(f"{path}: quantize={quantize} is not supported for MaxText checkpoints")
        params = load_maxtext_params(maxtext.tree, config, maxtext.style, np.dtype(jnp.dtype(DTYPES[dtype])), targets)
    elif mapping is not None:  # another trainer's tree (jaxeval/weights/mapped.py)
        from jaxeval.weights.mapped import load_mapped_params

        if quantization:
            raise ConfigError("load_model: quantize with mapping= is not supported (load, then quantize a converted copy)")
        params, mapped = load_mapped_params(folder, mapping, config, np.dtype(jnp.dtype(DTYPES[dtype])), targets)
    else:
        params, quantization = load_params(folder, config, dtype, source, targets, quantization, quant_group,
                                           dequantize, mesh)
    module = build_module(config, params, dtype)
    model_tokenizer = None
    if load_tokenizer:
        model_tokenizer = (load_maxtext_tokenizer(maxtext.tokenizer, tokenizer) if maxtext
                           else load_gguf_tokenizer(gguf) if gguf else load_tokenizer_from(folder))
    return Model(module=module, tokenizer=model_tokenizer, path=str(path), dtype=dtype,
                 fingerprint=(maxtext_fingerprint(maxtext, dtype, kv_label) if maxtext
                              else _with_mapping(fingerprint(folder, dtype, gguf, quantization, kv_label), mapped)),
                 runtime=Runtime(attention=attention, prefill_chunk=prefill_chunk, dtype=dtype, mesh=mesh,
                                 kv_cache=policy),
                 config_overrides=config_overrides, quantization=quantization,
                 generation_eos_ids=() if maxtext else generation_eos_ids(folder))


def _with_mapping(fingerprint_: str, mapped: str | None) -> str:
    """A mapped tree's fingerprint also covers the mapping and the tree's files (not in weight_files)."""
    return fingerprint_ if mapped is None else hashlib.sha256(f"{fingerprint_}:{mapped}".encode()).hexdigest()[:16]


def build_module(config: ModelConfig, params: dict, dtype: str) -> Decoder:
    """An NNX Decoder (HybridDecoder for Qwen3.5) holding `params` (no random initialisation is run)."""
    module_class = HybridDecoder if is_hybrid(config) else Decoder
    module = nnx.eval_shape(lambda: module_class(config, dtype=DTYPES[dtype], rngs=nnx.Rngs(0)))
    state = nnx.state(module, nnx.Param)
    nnx.replace_by_pure_dict(state, params)
    nnx.update(module, state)
    return module


