"""MaxText's own code as the reference (by hand, not in the default run: `pytest -m maxtext`; docs/maxtext.md).

Tiny random Hugging Face models of six families (Llama 3.1, Gemma 2, Gemma 3, Qwen3-MoE, gpt-oss, DeepSeek-V3) are
converted with
MaxText's own converter (maxtext 0.2.5's to_maxtext, in its own Python 3.12 virtualenv, run as a
subprocess); jaxeval's read of each MaxText checkpoint must equal its read of the Hugging Face folder
(max |d log p| <= 1e-5, float32, 16k positions) and, where MaxText's forward runs on CPU, MaxText's own
log-probs on the same checkpoint. Needs JAXEVAL_MAXTEXT_PYTHON (the venv's python; default
/work/venvs/maxtext/bin/python) and torch + transformers here (to write the Hugging Face folders).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

MT_PYTHON = os.environ.get("JAXEVAL_MAXTEXT_PYTHON", "/work/venvs/maxtext/bin/python")
pytestmark = [pytest.mark.maxtext,
              pytest.mark.skipif(not Path(MT_PYTHON).is_file(),
                                 reason=f"no MaxText reference venv at {MT_PYTHON} (set JAXEVAL_MAXTEXT_PYTHON; "
                                        "docs/maxtext.md has the install)")]

SEQ = 16384  # positions read by both jaxeval models
MT_SEQ = 512  # positions MaxText's own forward reads (its dot-product attention is O(S^2) in memory on CPU)
SHAPE = ["override_model_config=True", "base_emb_dim=128", "base_num_query_heads=4", "base_num_kv_heads=2",
         "base_mlp_dim=256", "head_dim=32", "vocab_size=1024"]
FAMILIES = {
    "llama31": ["model_name=llama3.1-8b", *SHAPE, "base_num_decoder_layers=2"],
    "gemma3": ["model_name=gemma3-4b", *SHAPE, "base_num_decoder_layers=7", "sliding_window_size=128",
               "use_multimodal=False"],
    "gemma2": ["model_name=gemma2-2b", *SHAPE, "base_num_decoder_layers=2", "sliding_window_size=128"],  # 2 pairs
    "gptoss": ["model_name=gpt-oss-20b", *SHAPE, "base_mlp_dim=64", "base_moe_mlp_dim=64", "num_experts=4",
               "num_experts_per_tok=2", "base_num_decoder_layers=4"],
    # MaxText 0.2.5's to_maxtext converts DeepSeek-V3 only unscanned and without the routed gate bias (scanned, it
    # reshapes the router kernel to the wrong slice shape; the bias, an NNX MoEBiasVar, is missing from its
    # parameter map): the HF folder's e_score_correction_bias is zero and routed_bias=False says so
    "deepseek3": ["model_name=deepseek3-671b", "override_model_config=True", "base_emb_dim=128", "base_num_query_heads=4",
                  "base_num_kv_heads=4", "base_mlp_dim=256", "base_moe_mlp_dim=64", "base_num_decoder_layers=3",
                  "first_num_dense_layers=1", "num_experts=4", "num_experts_per_tok=2", "q_lora_rank=64",
                  "kv_lora_rank=32", "qk_nope_head_dim=32", "qk_rope_head_dim=16", "v_head_dim=32", "vocab_size=1024",
                  "routed_bias=False"],
    "qwen3moe": ["model_name=qwen3-30b-a3b", *SHAPE, "base_mlp_dim=64", "base_moe_mlp_dim=64", "num_experts=8",
                 "num_experts_per_tok=2", "rope_max_timescale=10000000", "base_num_decoder_layers=2"],
}

# MaxText's converter sizes its mapping from its own table of real-size transformers configs; a tiny
# model replaces its model_name's entry with the folder's config, then runs to_maxtext unchanged.
CONVERT = """
import runpy, sys, transformers
from maxtext.checkpoint_conversion.utils import hf_model_configs
name = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("model_name="))
folder = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--hf_model_path="))
hf_model_configs.HF_MODEL_CONFIGS[name] = transformers.AutoConfig.from_pretrained(folder)
runpy.run_module("maxtext.checkpoint_conversion.to_maxtext", run_name="__main__", alter_sys=True)
"""

# MaxText's forward: its NNX Transformer loaded by model_creation_utils.from_pretrained. F32_TIED_HEAD
# takes its tied head in float32 (MaxText's attend_on_embedding casts the table to bfloat16 even in a float32
# run: an artefact of its code that jaxeval does not reproduce; maxtext_reference.md §4).
FORWARD = """
import os, sys, numpy as np, jax, jax.numpy as jnp, maxtext
from maxtext.configs import pyconfig
from maxtext.utils import model_creation_utils
ids_file, items, out = sys.argv[1:4]
ids = np.load(ids_file); batch, seq = ids.shape
base = os.path.join(os.path.dirname(maxtext.__file__), "configs", "base.yml")
config = pyconfig.initialize([None, base, *sys.argv[4:], f"load_parameters_path={items}", f"max_target_length={seq}",
    f"per_device_batch_size={batch}", "dtype=float32", "weight_dtype=float32", "matmul_precision=highest",
    "attention=dot_product", "hardware=cpu", "skip_jax_distributed_system=True", "enable_checkpointing=False",
    "run_name=fwd", f"base_output_directory={os.path.dirname(out)}"])
if os.environ.get("F32_TIED_HEAD") == "1":
    from maxtext.layers import nnx_decoders
    nnx_decoders.attend_on_embedding = lambda q, table, attend_dtype, config, out_sharding=None: jnp.dot(
        q, jnp.asarray(table, jnp.float32).T, preferred_element_type=attend_dtype, precision=jax.lax.Precision.HIGHEST)
model, mesh = model_creation_utils.from_pretrained(config)
pos = np.broadcast_to(np.arange(seq, dtype=np.int32), (batch, seq))
with mesh:
    logits = model(jnp.asarray(ids), jnp.asarray(pos), decoder_segment_ids=jnp.ones((batch, seq), jnp.int32),
                   enable_dropout=False)
np.save(out, np.asarray(jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), -1)))
"""


def _randomise(model, gemma: bool):
    """Weights far from uniform logits: matrices N(0, 1/fan_in), norm weights around their identity."""
    import torch

    torch.manual_seed(0)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".experts." in name and p.ndim == 3:  # gpt-oss's fused experts are [E, in, out]
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-2]))
            elif not gemma and ("norm" not in name and p.ndim == 1 or name.endswith("_bias")):  # gpt-oss: biases, sinks
                p.copy_(0.1 * torch.randn_like(p))
            elif p.ndim == 1:
                p.copy_(0.2 * torch.randn_like(p) if gemma and "norm" in name else
                        0.02 * torch.randn_like(p) if gemma else 1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-1]))


def _hf_folder(family: str, folder: Path) -> Path:
    import transformers

    common = dict(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, max_position_embeddings=131072, tie_word_embeddings=False)
    if family == "llama31":
        cfg = transformers.LlamaConfig(**common, rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling={
            "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192})
        model = transformers.LlamaForCausalLM(cfg)
    elif family == "qwen3moe":
        cfg = transformers.Qwen3MoeConfig(**{**common, "intermediate_size": 64}, moe_intermediate_size=64, num_experts=8,
                                          num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1,
                                          mlp_only_layers=[], rms_norm_eps=1e-6, rope_theta=1e7)
        model = transformers.Qwen3MoeForCausalLM(cfg)
    elif family == "gemma2":
        cfg = transformers.Gemma2Config(**{**common, "num_hidden_layers": 4, "tie_word_embeddings": True},
                                        query_pre_attn_scalar=32, sliding_window=128, rms_norm_eps=1e-6,
                                        rope_theta=10000.0, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                                        hidden_activation="gelu_pytorch_tanh")
        model = transformers.Gemma2ForCausalLM(cfg)
    elif family == "deepseek3":
        cfg = transformers.DeepseekV3Config(
            **{**common, "num_hidden_layers": 3, "num_key_value_heads": 4, "max_position_embeddings": 163840},
            moe_intermediate_size=64, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
            n_shared_experts=1, n_group=1, topk_group=1, routed_scaling_factor=2.5, norm_topk_prob=True, q_lora_rank=64,
            kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32, rms_norm_eps=1e-6,
            rope_interleave=True, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                                   "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0,
                                                   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096})
        model = transformers.DeepseekV3ForCausalLM(cfg)
    elif family == "gptoss":
        cfg = transformers.GptOssConfig(**{**common, "intermediate_size": 64, "num_hidden_layers": 4},
                                        num_local_experts=4, num_experts_per_tok=2, sliding_window=128, rms_norm_eps=1e-5,
                                        layer_types=["sliding_attention", "full_attention"] * 2)
        model = transformers.GptOssForCausalLM(cfg)
    else:
        text = {**common, "num_hidden_layers": 7, "query_pre_attn_scalar": 32, "rms_norm_eps": 1e-6,
                "sliding_window": 128, "hidden_activation": "gelu_pytorch_tanh",
                "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
        text.pop("tie_word_embeddings")
        vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                      image_size=28, patch_size=14)
        cfg = transformers.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4,
                                        image_token_index=1023, boi_token_index=1021, eoi_token_index=1022,
                                        tie_word_embeddings=True)
        model = transformers.Gemma3ForConditionalGeneration(cfg)
    model = model.float().eval()
    _randomise(model, family in ("gemma2", "gemma3"))
    if family == "deepseek3":
        import torch
        with torch.no_grad():
            for layer in model.model.layers[1:]:
                layer.mlp.gate.e_score_correction_bias.zero_()
    model.save_pretrained(folder, safe_serialization=True)
    if family == "gemma3":  # MaxText's gemma3 mapping reads transformers' in-memory names (model.language_model.*)
        from safetensors.numpy import load_file, save_file
        renames = (("language_model.model.", "model.language_model."),
                   ("vision_tower.", "model.vision_tower.vision_model."),
                   ("multi_modal_projector.", "model.multi_modal_projector."))
        tensors = load_file(folder / "model.safetensors")
        out = {}
        for key, value in tensors.items():
            new = next((b + key[len(a):] for a, b in renames if key.startswith(a)), key)
            out[new] = value
        save_file(out, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _maxtext(script: str, args: list[str], cwd: Path, env: dict | None = None, timeout: int = 900):
    run = subprocess.run([MT_PYTHON, "-c", script, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, "JAX_PLATFORMS": "cpu", **(env or {})})
    assert run.returncode == 0, run.stderr[-3000:]


def _base_yml() -> str:
    out = subprocess.run([MT_PYTHON, "-c", "import maxtext, os; print(os.path.dirname(maxtext.__file__))"],
                         capture_output=True, text=True, check=True)
    return f"{out.stdout.strip()}/configs/base.yml"


@pytest.fixture(scope="module", params=list(FAMILIES))
def converted(request, tmp_path_factory):
    """(family, HF folder, MaxText checkpoint folder (scanned but DeepSeek-V3), its MaxText overrides)."""
    family = request.param
    root = tmp_path_factory.mktemp(f"mt_{family}")
    hf = _hf_folder(family, root / "hf")
    args = [*FAMILIES[family], f"scan_layers={family != 'deepseek3'}"]
    _maxtext(CONVERT, [_base_yml(), *args, f"base_output_directory={root / 'ckpt'}", f"--hf_model_path={hf}",
                       "hardware=cpu", "skip_jax_distributed_system=True", "--save_dtype=float32"], root)
    return family, hf, root / "ckpt" / "0", args


def _read(model, ids):
    pos = np.arange(1, len(ids))
    return np.asarray(model.read(ids, pos, ids[1:]).logprobs, np.float64).reshape(-1)


def test_maxtext_checkpoint_reads_equal_to_hf_folder(converted):
    import jaxeval
    from flax import nnx

    family, hf, ckpt, args = converted
    ids = np.random.default_rng(1).integers(0, 1000, size=SEQ)  # below Gemma 3's special ids
    ours = jaxeval.load_model(ckpt, dtype="float32", load_tokenizer=False, maxtext_config=" ".join(args))
    ref = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False)
    if family == "gemma3":
        # MaxText's converter stores E * bf16(sqrt(d)) and its model divides logits by exact sqrt(d): a converted
        # Gemma 3 is the HF model with the table scaled by bf16(sqrt(d)) / sqrt(d) = 0.99989 at d = 128.
        ratio = float(np.float32(128 ** 0.5).astype("bfloat16").astype(np.float32)) / 128 ** 0.5
        state = nnx.state(ref.module, nnx.Param)
        state["embed"].value = state["embed"].value * np.float32(ratio)
        nnx.update(ref.module, state)
        ref._params = ref.module.params()  # the Model holds its parameters from load time
    delta = np.abs(_read(ours, ids) - _read(ref, ids)).max()
    print(f"{family}: max |d log p| over {SEQ - 1} positions = {delta:.2e}")
    assert delta <= 1e-5


@pytest.mark.parametrize("family", ["llama31", "gemma2", "gemma3", "deepseek3"])
def test_maxtext_checkpoint_reads_equal_to_maxtext_forward(converted, family, tmp_path):
    """MaxText's forward on the same checkpoint (eager; Gemma 2 and 3 with the tied head in float32; DeepSeek-V3 with
    routed_bias=False, the only DeepSeek checkpoint its converter writes). Qwen3-MoE is left out: MaxText's own
    forward is 1e-4 from transformers there (maxtext_reference.md §7); gpt-oss is checked against its Hugging Face
    folder only."""
    import jaxeval

    got_family, _, ckpt, args = converted
    if got_family != family:
        pytest.skip("another family's fixture")
    ids = np.random.default_rng(2).integers(0, 1000, size=(1, MT_SEQ))
    np.save(tmp_path / "ids.npy", ids)
    _maxtext(FORWARD, [str(tmp_path / "ids.npy"), str(ckpt / "items"), str(tmp_path / "mt.npy"), *args], tmp_path,
             env={"F32_TIED_HEAD": "1"})
    mt = np.load(tmp_path / "mt.npy")[0]  # [S, V]: position p's log-softmax predicts ids[p + 1]
    want = mt[np.arange(MT_SEQ - 1), ids[0, 1:]]
    ours = jaxeval.load_model(ckpt, dtype="float32", load_tokenizer=False, maxtext_config=" ".join(args))
    delta = np.abs(_read(ours, ids[0]) - want).max()
    print(f"{family}: max |d log p| vs MaxText's forward over {MT_SEQ - 1} positions = {delta:.2e}")
    assert delta <= 1e-4 if family == "llama31" else delta <= 1e-5
