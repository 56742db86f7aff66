"""GGUF checkpoints (llama.cpp's format) read natively, through the `gguf` package (llama.cpp's own reader).

The metadata becomes a Hugging Face style config dict (then the usual jaxeval.models.config path);
each tensor is dequantized to float32 by gguf.quants (F32/F16/BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K
and every other type the package knows) and handed to jaxeval.weights.hf_weights under its Hugging Face
name, undoing what llama.cpp's converter did to it:
- llama (and mistral, which llama.cpp writes as llama): q and k rows permuted for llama.cpp's
  interleaved rope; permuted back to Hugging Face's half-split order.
- gemma2 / gemma3: RMSNorm weights stored as 1 + w (ggml multiplies by the weight); stored - 1 here.
By default the matmul weights stay in their block codes on the device (jaxeval.weights.gguf_codes,
jaxeval.weights.gguf_quantized), rebuilt inside the jitted matmuls; with dequantize=True every tensor
is dequantized at load (float32 on the host, then cast to the model dtype), as transformers' GGUF
loading does. The embedding and the norms are always dequantized at load.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from jaxeval.errors import CheckpointError
from jaxeval.models.config import GEMMA3_TEXT_DEFAULTS

# llama.cpp architecture -> (model_type, per-architecture metadata -> config.json field)
_COMMON = {"context_length": "max_position_embeddings", "block_count": "num_hidden_layers",
           "feed_forward_length": "intermediate_size", "embedding_length": "hidden_size",
           "rope.freq_base": "rope_theta", "attention.head_count": "num_attention_heads",
           "attention.head_count_kv": "num_key_value_heads", "attention.layer_norm_rms_epsilon": "rms_norm_eps",
           "attention.key_length": "head_dim"}
ARCHITECTURES = {
    "llama": ("llama", {**_COMMON, "rope.dimension_count": "head_dim"}),
    "qwen2": ("qwen2", _COMMON),
    "qwen3": ("qwen3", _COMMON),
    "gemma2": ("gemma2", {**_COMMON, "attention.sliding_window": "sliding_window"}),
    "gemma3": ("gemma3_text", {**_COMMON, "attention.sliding_window": "sliding_window"}),
}
_PERMUTED_QK = ("llama",)
_NORM_PLUS_ONE = ("gemma2", "gemma3")

# llama.cpp tensor name (inside blk.{i}.) -> Hugging Face name (inside model.layers.{i}.)
_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
    "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
}
_NORMS_PLAIN = {"ffn_norm": "post_attention_layernorm"}  # Llama/Qwen: the MLP's input norm
_NORMS_SANDWICH = {"post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
                   "post_ffw_norm": "post_feedforward_layernorm"}  # Gemma


def gguf_file(path: str | Path) -> Path | None:
    """The .gguf file `path` names: the file itself, or the single .gguf in a folder without config.json."""
    path = Path(path)
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and not (path / "config.json").exists():
        found = sorted(path.glob("*.gguf"))
        if len(found) > 1:
            raise CheckpointError(f"{path}: several .gguf files ({', '.join(f.name for f in found)}); "
                                  "name the one to load")
        return found[0] if found else None
    return None


class GGUFCheckpoint:
    """A GGUF file: `.config` (a config.json-style dict) and HF-named float32 tensors (`name in ckpt`, `.get`)."""

    def __init__(self, file: Path):
        import gguf

        self.folder = file
        try:
            self.reader = gguf.GGUFReader(str(file))
        except (OSError, ValueError) as e:
            raise CheckpointError(f"{file}: not a readable GGUF file ({type(e).__name__}: {e})") from None
        self.arch = self._field("general.architecture")
        if self.arch not in ARCHITECTURES:
            raise CheckpointError(f"{file}: GGUF architecture {self.arch!r} is not supported "
                                  f"(supported: {', '.join(ARCHITECTURES)})")
        self.tensors = {t.name: t for t in self.reader.tensors}
        if "rope_freqs.weight" in self.tensors:
            raise CheckpointError(f"{file}: a rope_freqs tensor (llama.cpp's baked llama3 rope factors) is not "
                                  "supported; load the Hugging Face folder instead")
        self.config = self._config()
        self._names = self._hf_names()

    def _field(self, key: str, default=None):
        field = self.reader.fields.get(key)
        if field is None:
            return default
        value = field.contents()
        return value.item() if isinstance(value, np.generic) else value

    def _config(self) -> dict:
        model_type, mapping = ARCHITECTURES[self.arch]
        raw = dict(GEMMA3_TEXT_DEFAULTS) if model_type == "gemma3_text" else {}
        for key, field in mapping.items():
            value = self._field(f"{self.arch}.{key}")
            if value is not None:
                raw[field] = value
        tokens = self._field("tokenizer.ggml.tokens")
        vocab = self._field(f"{self.arch}.vocab_size", len(tokens) if tokens is not None else None)
        raw |= {"model_type": model_type, "vocab_size": vocab,
                "tie_word_embeddings": "output.weight" not in self.tensors,
                "bos_token_id": self._field("tokenizer.ggml.bos_token_id"),
                "eos_token_id": self._field("tokenizer.ggml.eos_token_id")}
        scaling = self._field(f"{self.arch}.rope.scaling.type")
        if scaling not in (None, "none"):
            raw["rope_scaling"] = {"rope_type": scaling, "factor": self._field(f"{self.arch}.rope.scaling.factor"),
                                   "original_max_position_embeddings":
                                       self._field(f"{self.arch}.rope.scaling.original_context_length")}
        if model_type == "qwen2":
            raw["attention_bias"] = True
        return {k: v for k, v in raw.items() if v is not None}

    def _hf_names(self) -> dict[str, str]:
        """Hugging Face tensor name -> GGUF tensor name."""
        names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                 "lm_head.weight": "output.weight"}
        layer_names = {**_LAYER_NAMES, **(_NORMS_SANDWICH if self.arch in _NORM_PLUS_ONE else _NORMS_PLAIN)}
        for i in range(int(self.config["num_hidden_layers"])):
            for ours, hf in layer_names.items():
                for kind in ("weight", "bias"):
                    names[f"model.layers.{i}.{hf}.{kind}"] = f"blk.{i}.{ours}.{kind}"
        return {hf: g for hf, g in names.items() if g in self.tensors}

    def __contains__(self, name: str) -> bool:
        return name in self._names

    def _tensor(self, name: str):
        if name not in self._names:
            raise CheckpointError(f"{self.folder}: no GGUF tensor for {name!r}")
        return self.tensors[self._names[name]]

    def _permuted_heads(self, name: str) -> int | None:
        """The head count of a q/k projection whose rows llama.cpp permuted (None for any other tensor)."""
        if self.arch not in _PERMUTED_QK or not name.endswith(("q_proj.weight", "k_proj.weight")):
            return None
        heads = self.config["num_attention_heads"]
        return heads if "q_proj" in name else self.config.get("num_key_value_heads", heads)

    def get(self, name: str) -> np.ndarray:
        """The HF tensor `name` as float32 numpy, in Hugging Face's layout."""
        import gguf

        tensor = self._tensor(name)
        shape = tuple(int(d) for d in reversed(tensor.shape))  # ggml lists the fastest dimension first
        try:
            w = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32).reshape(shape)
        except NotImplementedError as e:
            raise CheckpointError(f"{self.folder}: tensor {tensor.name!r} has GGUF type {tensor.tensor_type.name}, "
                                  f"which the gguf package cannot dequantize ({e})") from None
        heads = self._permuted_heads(name)
        if heads:
            w = _unpermute(w, heads)
        if self.arch in _NORM_PLUS_ONE and name.endswith("norm.weight"):
            w = w - np.float32(1)
        return w

    def codes(self, name: str):
        """The HF tensor `name` as block codes, scales and offsets (jaxeval.weights.gguf_codes.Codes) in
        Hugging Face's [out, in] layout, rows permuted as get() permutes them; None for a float tensor."""
        from jaxeval.weights.gguf_codes import read_codes

        tensor = self._tensor(name)
        codes = read_codes(tensor, f"{self.folder}: tensor {tensor.name!r}")
        heads = self._permuted_heads(name)
        if codes is not None and heads:
            codes.codes, codes.scale = _unpermute(codes.codes, heads), _unpermute(codes.scale, heads)
            if codes.offset is not None:
                codes.offset = _unpermute(codes.offset, heads)
        return codes


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's q/k row order (pairs interleaved within each head) -> Hugging Face's (halves)."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def load_gguf_tokenizer(file: Path):
    """The tokenizer (and chat template) stored in the GGUF metadata, through transformers."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(file.parent), gguf_file=file.name)
    except Exception as e:
        raise CheckpointError(f"{file}: the GGUF tokenizer could not be read ({type(e).__name__}: {e})") from None
