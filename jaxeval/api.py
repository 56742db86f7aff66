"""The public Python surface: load_model() and the Model it returns."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.compile_cache import enable_compile_cache
from jaxeval.engine.distributed import initialize_distributed
from jaxeval.engine.read import read as engine_read
from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.attention import BACKENDS, check_attention
from jaxeval.models.checkpoint import TOKENIZER_FILES, is_jaxeval_checkpoint, load_checkpoint_params
from jaxeval.models.config import ModelConfig, check_overrides, config_from_hf, load_hf_config
from jaxeval.models.gguf_weights import GGUFCheckpoint, gguf_file, load_gguf_tokenizer
from jaxeval.models.decoder import Decoder
from jaxeval.models.hybrid import HybridDecoder
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.models.kv_policy import KVPolicy, check_policy, check_supported, from_flags
from jaxeval.models.param_layout import param_axes, param_shapes
from jaxeval.models.hf_weights import load_hf_params
from jaxeval.models.mesh import make_mesh
from jaxeval.models.gguf_quantized import LABEL as GGUF_BLOCKS, excluded, quantized_gguf_params
from jaxeval.models.checkpoint_quant import folder_scheme, load_quantized_linears
from jaxeval.models.quant import DEFAULT_GROUP, check_quantizable, check_quantize, dequantize_tree, quantize_params
from jaxeval.models.quant_sharding import place_params
from jaxeval.models.sharding import check_mesh_fits, param_shardings

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


@dataclasses.dataclass
class Model:
    """A loaded model: the Flax NNX module, its tokenizer (optional) and the jitted read."""

    module: Decoder
    tokenizer: object | None
    path: str
    dtype: str
    fingerprint: str  # identifies weights + config + dtype (journals key results on it)
    attention: str = "chunked"
    prefill_chunk: int = 2048
    mesh: object | None = None  # jax.sharding.Mesh the weights are sharded over (None: one device)
    config_overrides: dict = dataclasses.field(default_factory=dict)  # config.json fields replaced at load
    quantization: str | None = None  # "int8", "int4-g128", "fp8": weights quantized at load (jaxeval.models.quant)
    generation_eos_ids: tuple[int, ...] = ()  # generation_config.json's eos_token_id (one id or a list)
    kv_cache: str | None = None  # the KV-cache policy's label (jaxeval.models.kv_policy); None: the exact cache

    def __post_init__(self):
        self._params = self.module.params()
        self.stats = {"reads": 0, "tokens": 0}  # sequences read and input tokens run through the trunk

    @property
    def config(self) -> ModelConfig:
        return self.module.config

    @property
    def max_length(self) -> int:
        """Longest text read(): its last token is only predicted, so it needs no position of its own."""
        return self.config.context_limit + 1

    def read(self, ids, positions, tokens) -> ReadResult:
        """Teacher-forced read; see jaxeval.engine.backend.ReadBackend.read."""
        result = engine_read(self._params, self.config, ids, positions, tokens, backend=self.attention,
                             prefill_chunk_len=self.prefill_chunk, dtype=DTYPES[self.dtype], mesh=self.mesh)
        self.stats["reads"] += 1
        self.stats["tokens"] += int(np.max(positions))
        return result

    def read_many(self, requests, batch_size: int = 1):
        """Teacher-forced reads of many (ids, positions, tokens) requests, each shared token prefix run once.

        -> jaxeval.engine.prefix_reuse.SharedReads: results in request order (identical to separate
        reads up to float32 noise), tokens_run and tokens_naive (one separate read per request).
        batch_size: requests that share no prefix are read that many per step (read_batch).
        """
        from jaxeval.engine.prefix_reuse import read_many

        shared = read_many(self._params, self.config, requests, backend=self.attention,
                           prefill_chunk_len=self.prefill_chunk, dtype=DTYPES[self.dtype], mesh=self.mesh,
                           batch_size=batch_size)
        self.stats["reads"] += len(shared.results)
        self.stats["tokens"] += shared.tokens_run
        return shared

    def read_batch(self, requests, batch_size: int = 8) -> list[ReadResult]:
        """read() of every (ids, positions, tokens) request, in order; sequences of one length bucket
        batch_size per jitted step (jaxeval.engine.batch_read), the results those of read()."""
        from jaxeval.engine.batch_read import read_batch

        requests = list(requests)
        results = read_batch(self._params, self.config, requests, batch_size=batch_size, backend=self.attention,
                             prefill_chunk_len=self.prefill_chunk, dtype=DTYPES[self.dtype], mesh=self.mesh)
        self.stats["reads"] += len(results)
        self.stats["tokens"] += sum(int(np.max(positions)) for _, positions, _ in requests)
        return results

    def final_states(self, ids, rows):
        """float32 [K, D]: the final-norm hidden state at each token index of rows in ids (jaxeval.engine.states)."""
        from jaxeval.engine.states import final_states

        return final_states(self._params, self.config, ids, rows, backend=self.attention,
                            prefill_chunk_len=self.prefill_chunk, dtype=DTYPES[self.dtype], mesh=self.mesh)

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
        order (jaxeval.engine.backend.GenerateBackend).

        Stops at eos_token_ids, at stop_token_ids, at the first of the stop strings (the text is cut
        before it) or after max_new_tokens; no EOS or stop id is chosen before min_new_tokens.
        temperature 0 is greedy; sampling is reproducible from the seed. See jaxeval.engine.generate.generate.
        """
        from jaxeval.engine.generate import generate as engine_generate

        return engine_generate(self._params, self.config, prompts, max_new_tokens, stop=stop, temperature=temperature,
                               top_p=top_p, seed=seed, tokenizer=self.tokenizer, eos_token_ids=self.eos_token_ids,
                               stop_token_ids=stop_token_ids, min_new_tokens=min_new_tokens, backend=self.attention,
                               prefill_chunk_len=self.prefill_chunk, batch_size=batch_size, mesh=self.mesh)


def default_dtype() -> str:
    """What dtype="auto" loads: float32 on CPU, bfloat16 on accelerators."""
    return "float32" if jax.default_backend() == "cpu" else "bfloat16"


def model_config_of(folder: Path, overrides: dict | None = None, source=None) -> ModelConfig:
    """The ModelConfig load_model builds for a resolved model folder (or .gguf file), overrides
    applied; no weight is read. source: the folder's GGUFCheckpoint when already open."""
    overrides = check_overrides(overrides, "load_model")
    gguf = None if source is not None else gguf_file(folder)
    source = source if source is not None else (GGUFCheckpoint(gguf) if gguf else None)
    if source is not None:
        return config_from_hf(source.config, where=str(gguf or source.folder), overrides=overrides)
    return load_hf_config(folder, overrides)


def load_model(path: str | Path, dtype: str = "bfloat16", *, attention: str = "chunked",
               prefill_chunk: int = 2048, load_tokenizer: bool = True, mesh=None, lm_head: bool = True,
               quantize: str | None = None, quant_group: int = DEFAULT_GROUP, dequantize: bool = False,
               kv_cache: KVPolicy | str | None = None, **config_overrides) -> Model:
    """Load a HF safetensors folder, a jaxeval Orbax checkpoint folder, or a hub id (when online).

    config_overrides replace config.json fields, as model cards enable long context, e.g.
    load_model(path, rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    max_position_embeddings=131072); the fields allowed are jaxeval.models.config.CONFIG_OVERRIDES.

    mesh: None (one device), a spec such as "data=2,tensor=2,context=2" or "auto", or a
    jax.sharding.Mesh with axes ("data", "fsdp", "expert", "tensor", "context"); see jaxeval.models.mesh.
    quantize: "int8" (per channel), "int4" (symmetric, quant_group rows per scale) or "fp8" (e4m3 per
    channel): every matmul weight is rounded to it at load and held so on the device, rebuilt inside
    the jitted matmuls (jaxeval.models.quant); the embedding and the norms stay in dtype.
    A GGUF checkpoint's block-quantized matmul weights stay in their codes on the device the same
    way (jaxeval.models.gguf_quantized; quantization "gguf-blocks"), unless dequantize=True or with
    quantize, when every tensor is dequantized at load as transformers does. On a mesh, quantized
    weights are sharded along their dense weight's logical axes (jaxeval.models.quant_sharding).
    kv_cache: a KV-cache policy for reads and generation (jaxeval.models.kv_policy): "int8", "fp8",
    "streaming", "snapkv" (their default settings) or a KVPolicy; None or "exact": the exact cache.
    It is recorded (Model.kv_cache) and part of the fingerprint.
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
    folder = resolve_model_path(path)
    gguf = gguf_file(folder)  # a llama.cpp checkpoint: config, weights and tokenizer in one file
    source = GGUFCheckpoint(gguf) if gguf else None
    config = model_config_of(folder, config_overrides, source)
    if not lm_head:
        config = dataclasses.replace(config, tie_word_embeddings=True)
    check_attention(attention, config, dtype)  # backend vs platform, dtype, windows, soft-cap
    policy = check_policy(kv_cache) if isinstance(kv_cache, KVPolicy) else from_flags(kv_cache)
    check_supported(policy, config, mesh, attention)
    config = dataclasses.replace(config, kv_cache=policy)
    kv_label = policy.label if policy else None
    targets = None
    if mesh is not None:
        mesh = make_mesh(mesh, num_heads=config.num_heads, num_kv_heads=config.num_kv_heads,
                         context_parallel=not is_hybrid(config))
        check_mesh_fits(config, mesh, prefill_chunk)
        targets = param_shardings(param_shapes(config), mesh, param_axes(config))
    params, quantization = _load_params(folder, config, dtype, source, targets, quantization, quant_group,
                                        dequantize, mesh)
    module = build_module(config, params, dtype)
    tokenizer = None
    if load_tokenizer:
        tokenizer = load_gguf_tokenizer(gguf) if gguf else load_tokenizer_from(folder)
    return Model(module=module, tokenizer=tokenizer, path=str(path), dtype=dtype,
                 fingerprint=fingerprint(folder, dtype, gguf, quantization, kv_label), attention=attention,
                 prefill_chunk=prefill_chunk, mesh=mesh,
                 config_overrides=config_overrides, quantization=quantization,
                 generation_eos_ids=generation_eos_ids(folder), kv_cache=kv_label)


def _load_params(folder: Path, config: ModelConfig, dtype: str, source, targets, quantize: str | None,
                 quant_group: int, dequantize: bool, mesh=None) -> tuple[dict, str | None]:
    """The parameters, and the label of how their matmul weights are held (Model.quantization).

    quantize: check_quantize's label (rounded at load) or None. A quantized checkpoint's weights
    (GGUF blocks; GPTQ, AWQ, compressed-tensors, FP8 safetensors) stay quantized unless dequantize
    or quantize; a GGUF dequantized takes gguf's own dequantization (the path transformers takes).
    On a mesh (targets: the dense parameters' shardings), dense weights are read straight into their
    shardings; quantized ones are built on the host and then placed (jaxeval.models.quant_sharding).
    """
    np_dtype = np.dtype(jnp.dtype(DTYPES[dtype]))
    place = jnp.asarray if targets is None else np.asarray  # on a mesh: host arrays until place_params
    if is_jaxeval_checkpoint(folder):
        params = load_checkpoint_params(folder, config, DTYPES[dtype], sharding=None if quantize else targets)
        if not quantize:
            return params, None
        check_quantizable(config, f"{folder}: {quantize}")
        params = _rounded(params, quantize, quant_group, place)
        return (params if targets is None else place_params(params, mesh)), quantize
    scheme = None if source is not None else folder_scheme(folder)  # GPTQ, AWQ, compressed-tensors, FP8
    if scheme is not None or quantize or source is not None:
        check_quantizable(config, f"{folder}: {scheme.method if scheme else quantize or 'GGUF'}")
    if targets is not None and scheme is None and not quantize and (source is None or dequantize):
        return load_hf_params(folder, config, np_dtype, shardings=targets, tensors=source), None
    params, label = _quantized_params(folder, config, np_dtype, source, scheme, quantize, quant_group, dequantize,
                                      place)
    return (params if targets is None else place_params(params, mesh)), label


def _quantized_params(folder, config, np_dtype, source, scheme, quantize, quant_group, dequantize, place):
    """_load_params's quantized checkpoints and quantize-on-load, as `place` arrays (device or host)."""
    blocks, label = {}, None
    if scheme is not None:
        blocks, label = load_quantized_linears(folder, config, scheme), scheme.label
        if dequantize or quantize:
            blocks, label = dequantize_tree(blocks, np_dtype), f"{label}-dequantized"
    elif source is not None and not (dequantize or quantize):
        blocks, label = quantized_gguf_params(source, config), GGUF_BLOCKS
    blocks = jax.tree.map(place, blocks)
    params = jax.tree.map(place, load_hf_params(folder, config, np_dtype, tensors=source,
                                                      exclude=frozenset(excluded(blocks) if blocks else ())))
    if blocks:
        params["layers"].update(blocks["layers"])
        params.update({"lm_head": blocks["lm_head"]} if "lm_head" in blocks else {})
    if not quantize:
        return params, label if blocks and excluded(blocks) else None
    return _rounded(params, quantize, quant_group, place), f"{label}+{quantize}" if label else quantize


def _rounded(params: dict, label: str | None, group: int, place=jnp.asarray) -> dict:
    """params with every matmul weight rounded to `label`'s kind (int8, int4-g128, fp8) at load."""
    if not label:
        return params
    return jax.tree.map(place, quantize_params(params, label.split("-")[0], group))


def generation_eos_ids(folder: Path) -> tuple[int, ...]:
    """generation_config.json's eos_token_id (an id or a list of ids; transformers stops at each),
    () when the folder has no such file or field."""
    from jaxeval.io.inputs import read_json

    path = Path(folder) / "generation_config.json"
    if not path.is_file():
        return ()
    raw = read_json(path, ConfigError, "generation config")
    eos = raw.get("eos_token_id") if isinstance(raw, dict) else None
    ids = [eos] if isinstance(eos, int) and not isinstance(eos, bool) else eos if isinstance(eos, list) else []
    if eos is not None and (not ids or any(isinstance(t, bool) or not isinstance(t, int) or t < 0 for t in ids)):
        raise ConfigError(f"{path}: eos_token_id must be a token id or a list of them, got {eos!r}")
    return tuple(ids)


def build_module(config: ModelConfig, params: dict, dtype: str) -> Decoder:
    """An NNX Decoder (HybridDecoder for Qwen3.5) holding `params` (no random initialisation is run)."""
    module_class = HybridDecoder if is_hybrid(config) else Decoder
    module = nnx.eval_shape(lambda: module_class(config, dtype=DTYPES[dtype], rngs=nnx.Rngs(0)))
    state = nnx.state(module, nnx.Param)
    nnx.replace_by_pure_dict(state, params)
    nnx.update(module, state)
    return module


def resolve_model_path(path: str | Path) -> Path:
    from jaxeval.io.fs import is_url, local_copy

    if is_url(path):  # gs://bucket/model or any fsspec URL: copied once into the local cache
        return local_copy(str(path))
    folder = Path(path)
    if folder.is_dir() or (folder.is_file() and folder.suffix == ".gguf"):
        return folder
    text = str(path)
    if folder.exists() or text.startswith((".", "/", "~")) or text.count("/") != 1:
        raise CheckpointError(f"{path}: not a model folder (expected config.json with safetensors or a jaxeval "
                              "Orbax checkpoint)")
    try:  # a hub id such as "Qwen/Qwen3-0.6B": fetch only what jaxeval reads (never torch weights)
        from huggingface_hub import snapshot_download
        return Path(snapshot_download(text, allow_patterns=["*.json", "*.safetensors", "tokenizer*", "*.jinja",
                                                              "*.txt", "*.model"]))
    except Exception as e:
        raise CheckpointError(f"{path}: not a local folder, and fetching it from the Hugging Face hub failed "
                              f"({type(e).__name__}: {e})") from None


def load_tokenizer_from(folder: Path):
    """The folder's tokenizer through transformers, or None when the folder has no tokenizer files."""
    if not any((folder / name).is_file() for name in TOKENIZER_FILES[:5]):
        return None
    from transformers import AutoTokenizer
    try:
        return AutoTokenizer.from_pretrained(str(folder))
    except Exception as e:
        raise CheckpointError(f"{folder}: tokenizer files present but unreadable ({type(e).__name__}: {e})") from None


def fingerprint(folder: Path, dtype: str, gguf: Path | None = None, quantization: str | None = None,
                kv_cache: str | None = None) -> str:
    """Hash of the config, the weights' content (sampled), the dtype, the tokenizer and the chat
    template (jaxeval.fingerprint; the journal names the part that differs), and the quantization
    applied at load and the KV-cache policy, if any. A GGUF file holds all of them: its sampled
    content and the dtype."""
    from jaxeval.fingerprint import model_fingerprint, sampled_digest

    if gguf is not None:
        label = (f"gguf:{sampled_digest(gguf)}:{dtype}" + (f":{quantization}" if quantization else "")
                 + (f":kv={kv_cache}" if kv_cache else ""))
        return hashlib.sha256(label.encode()).hexdigest()[:16]
    return model_fingerprint(folder, dtype, quantization, kv_cache)


def convert(src: str | Path, dst: str | Path, dtype: str | None = None) -> Path:
    """Write a jaxeval Orbax checkpoint from a HF safetensors folder (dtype defaults to the config's)."""
    from jaxeval.models.checkpoint import save_checkpoint

    folder = resolve_model_path(src)
    if is_jaxeval_checkpoint(folder):
        raise CheckpointError(f"{src}: already a jaxeval Orbax checkpoint")
    raw = json.loads((folder / "config.json").read_text())
    config = load_hf_config(folder)
    dtype = dtype or {"bfloat16": "bfloat16"}.get(raw.get("torch_dtype") or raw.get("dtype"), "float32")
    if dtype not in DTYPES:
        raise ConfigError(f"dtype={dtype!r} is not supported (choose {', '.join(DTYPES)})")
    params = load_hf_params(folder, config, np.dtype(jnp.dtype(DTYPES[dtype])))
    save_checkpoint(dst, params, raw, dtype, tokenizer_from=folder)
    return Path(dst)
