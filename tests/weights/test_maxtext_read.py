"""MaxText checkpoints read directly: each variant of the tree (converted scanned / unscanned, a training
state with optimizer state, the NNX param-only tree, Gemma 3's pattern-scanned layers) written in-test with
plain Orbax from tiny random Hugging Face tensors, read equal to the Hugging Face folder; and bad input."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest
from flax import nnx

import jaxeval
from jaxeval.errors import CheckpointError, ConfigError
from tests.models.conftest import TINY_LLAMA_CONFIG, hf_llama_tensors, write_hf_folder
from tests.weights import maxtext_fixtures as mf

LLAMA31 = {**TINY_LLAMA_CONFIG, "max_position_embeddings": 163840,
           "rope_parameters": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192, "rope_theta": 500000.0}}
SHAPE = ("override_model_config=True base_emb_dim=32 base_num_query_heads=4 base_num_kv_heads=2 head_dim=8 "
         "vocab_size=64")
LLAMA_ARGS = f"model_name=llama3.1-8b {SHAPE} base_mlp_dim=48 base_num_decoder_layers=2"
GEMMA2_ARGS = f"model_name=gemma2-2b {SHAPE} base_mlp_dim=48 base_num_decoder_layers=2 sliding_window_size=8"
GPT_OSS_ARGS = (f"model_name=gpt-oss-20b {SHAPE} base_mlp_dim=16 base_moe_mlp_dim=16 num_experts=4 "
                "num_experts_per_tok=2 base_num_decoder_layers=4 sliding_window_size=8")
GEMMA_ARGS = (f"model_name=gemma3-4b {SHAPE} base_mlp_dim=48 base_num_decoder_layers=7 sliding_window_size=8 "
              "use_multimodal=False")


def params_of(model) -> dict:
    return {jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_leaves_with_path(nnx.state(model.module, nnx.Param))}


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    root = tmp_path_factory.mktemp("maxtext_llama")
    tensors = hf_llama_tensors(LLAMA31)
    hf = write_hf_folder(root / "hf", LLAMA31, tensors)
    scanned = mf.maxtext_params(tensors, LLAMA31, "llama31", scanned=True)
    unscanned = mf.maxtext_params(tensors, LLAMA31, "llama31", scanned=False)
    mf.save_items(root / "converted/0/items", {"params": {"params": scanned}, "step": np.int64(0)})
    mf.save_items(root / "unscanned/0/items", {"params": {"params": unscanned}, "step": np.int64(0)})
    mf.save_items(root / "run/checkpoints/2/items", mf.training_state(scanned))
    mf.save_items(root / "decode/0/items", mf.nnx_values(mf._map(unscanned, lambda a: a.astype("bfloat16"))))
    return root, hf


@pytest.mark.parametrize("variant, scan", [("converted/0", True), ("unscanned/0", False),
                                           ("run/checkpoints/2", True), ("decode/0/items", False)])
def test_llama31_variants_read_equal_to_hf(llama, variant, scan):
    root, hf = llama
    want = params_of(jaxeval.load_model(hf, dtype="float32", load_tokenizer=False))
    got = params_of(jaxeval.load_model(root / variant, dtype="float32", load_tokenizer=False,
                                       maxtext_config=f"{LLAMA_ARGS} scan_layers={scan}"))
    assert set(got) == set(want)
    # the query's sqrt(head_dim) fold is the only rounding: float32 multiply vs divide; the NNX param-only
    # checkpoint is bfloat16, as generate_param_only_checkpoint writes it (one rounding of each weight)
    rtol, atol = (2 ** -8, 1e-6) if variant.startswith("decode") else (1e-6, 1e-7)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


def test_training_state_reads_params_only(llama, monkeypatch):
    """The Adam state (mu = 7, nu = 9 everywhere) is never restored: only params/params leaves are asked for."""
    import orbax.checkpoint as ocp

    asked = []
    restore = ocp.PyTreeCheckpointer.restore

    def spy(self, directory, *args, **kwargs):
        asked.append(set(kwargs["args"].item))
        return restore(self, directory, *args, **kwargs)

    monkeypatch.setattr(ocp.PyTreeCheckpointer, "restore", spy)
    root, _ = llama
    jaxeval.load_model(root / "run/checkpoints/2", dtype="float32", load_tokenizer=False, maxtext_config=LLAMA_ARGS)
    assert asked and all(keys == {"params"} for keys in asked)


def test_config_json_beside_the_run(llama, tmp_path):
    root, hf = llama
    (root / "run/config.json").write_text((hf / "config.json").read_text())
    got = params_of(jaxeval.load_model(root / "run/checkpoints/2", dtype="float32", load_tokenizer=False))
    want = params_of(jaxeval.load_model(hf, dtype="float32", load_tokenizer=False))
    np.testing.assert_allclose(got["['layers']['wq'].value"], want["['layers']['wq'].value"], rtol=1e-6)
    (root / "run/config.json").unlink()


def test_maxtext_read_equals_hf_log_probs(llama):
    root, hf = llama
    ids = np.random.default_rng(1).integers(0, 64, size=48)
    a = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False)
    b = jaxeval.load_model(root / "converted/0", dtype="float32", load_tokenizer=False, maxtext_config=LLAMA_ARGS)
    pos = np.arange(1, 48)
    ra, rb = a.read(ids, pos, ids[1:]), b.read(ids, pos, ids[1:])
    assert np.abs(np.asarray(ra.logprobs) - np.asarray(rb.logprobs)).max() <= 1e-5


@pytest.mark.parametrize("scan", [True, False])
def test_gemma3_pattern_layers_read_equal_to_hf(tmp_path, scan):
    c = mf.GEMMA3_TEXT
    tensors = mf.gemma3_tensors(c)
    hf = write_hf_folder(tmp_path / "hf", c, tensors)
    tree = mf.maxtext_params(tensors, c, "gemma3", scanned=scan)
    mf.save_items(tmp_path / "ck/0/items", {"params": {"params": tree}, "step": np.int64(0)})
    want = params_of(jaxeval.load_model(hf, dtype="float32", load_tokenizer=False))
    got = params_of(jaxeval.load_model(tmp_path / "ck/0", dtype="float32", load_tokenizer=False,
                                       maxtext_config=f"{GEMMA_ARGS} scan_layers={scan}"))
    # The table is read as MaxText defines the model (logits = h . table / exact sqrt(d)); the converter
    # stored E * bf16(sqrt(d)), so against the HF tensor it carries bf16(sqrt(d)) / sqrt(d) (0.99989 at d = 32).
    ratio = float(np.asarray(np.float32(32 ** 0.5)).astype("bfloat16").astype(np.float32)) / 32 ** 0.5
    want["['embed'].value"] = want["['embed'].value"] * np.float32(ratio)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=2e-7, err_msg=name)


@pytest.mark.parametrize("scan", [True, False])
def test_gemma2_paired_layers_read_equal_to_hf(tmp_path, scan):
    """Gemma 2's MaxText layer j holds layers 2j (_local) and 2j + 1 (_global); query x 1/sqrt(head_dim), norms
    + 1, table x float32 sqrt(d); read by --maxtext_config and by the folder's config.json alike."""
    c = mf.GEMMA2
    tensors = {k: v for k, v in mf.gemma3_tensors({**c, "num_hidden_layers": 4}).items() if "_norm." not in k}
    hf = write_hf_folder(tmp_path / "hf", c, tensors)
    tree = mf.maxtext_params(tensors, c, "gemma2", scanned=scan)
    mf.save_items(tmp_path / "ck/0/items", {"params": {"params": tree}, "step": np.int64(0)})
    ref = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False)
    want = params_of(ref)
    for kwargs in ({"maxtext_config": f"{GEMMA2_ARGS} scan_layers={scan}"}, {"config": hf / "config.json"}):
        model = jaxeval.load_model(tmp_path / "ck/0", dtype="float32", load_tokenizer=False, **kwargs)
        assert model.config.attn_logit_softcap == 50.0 and model.config.final_logit_softcap == 30.0
        got = params_of(model)
        assert sorted(got) == sorted(want)
        for name in want:
            np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=2e-7, err_msg=name)
    ids = np.random.default_rng(0).integers(0, 64, size=40)
    pos = np.arange(1, 40)
    delta = np.abs(np.asarray(model.read(ids, pos, ids[1:]).logprobs) - np.asarray(ref.read(ids, pos, ids[1:]).logprobs))
    assert delta.max() <= 1e-5


@pytest.mark.parametrize("scan", [True, False])
def test_gpt_oss_pattern_slots_read_equal_to_hf(tmp_path, scan):
    """gpt-oss's scanned tree holds (sliding, global) slots layers/layers_<k>, block j on axis 1 = layer 2j + k, its
    fused gate_up split into wi_0 / wi_1; no transformation of values: the read is bit for bit the folder's."""
    c = mf.GPT_OSS
    tensors = mf.gpt_oss_tensors(c)
    mf.save_items(tmp_path / "ck/0/items", {"params": {"params": mf.gpt_oss_params(tensors, c, scan)},
                                            "step": np.int64(0)})
    _same_as_hf(write_hf_folder(tmp_path / "hf", c, tensors), tmp_path / "ck/0", f"{GPT_OSS_ARGS} scan_layers={scan}")


def _same_as_hf(hf, ckpt, maxtext_config: str) -> None:
    """The MaxText checkpoint's model: the HF folder's config, and its parameters bit for bit."""
    ref = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False)
    model = jaxeval.load_model(ckpt, dtype="float32", load_tokenizer=False, maxtext_config=maxtext_config)
    assert model.config == ref.config
    want, got = params_of(ref), params_of(model)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


DEEPSEEK_ARGS = (f"model_name=deepseek3-671b override_model_config=True base_emb_dim=32 base_num_query_heads=4 "
                 "base_num_kv_heads=4 base_mlp_dim=48 base_moe_mlp_dim=16 base_num_decoder_layers=3 first_num_dense_layers=1 "
                 "num_experts=4 num_experts_per_tok=2 q_lora_rank=16 kv_lora_rank=8 qk_nope_head_dim=8 qk_rope_head_dim=4 "
                 "v_head_dim=8 vocab_size=64")


@pytest.mark.parametrize("scan", [True, False])
def test_deepseek_training_state_reads_equal_to_hf(tmp_path, scan):
    """DeepSeek-V3's dense_layers / moe_layers stacks and its MLA leaves, the routed gate bias from nnx_aux (a MaxText
    MoEBiasVar; layer axis 0 when scanned): bit for bit the folder's parameters; routed_bias=False reads zeros."""
    c = mf.DEEPSEEK
    tensors = mf.deepseek_tensors(c)
    mf.save_items(tmp_path / "run/checkpoints/1/items", mf.deepseek_state(tensors, c, scan))
    _same_as_hf(write_hf_folder(tmp_path / "hf", c, tensors), tmp_path / "run/checkpoints/1",
                f"{DEEPSEEK_ARGS} scan_layers={scan}")
    unbiased = params_of(jaxeval.load_model(tmp_path / "run/checkpoints/1", dtype="float32", load_tokenizer=False,
                                            maxtext_config=f"{DEEPSEEK_ARGS} routed_bias=False"))
    assert not unbiased["['layers']['moe_score_bias'].value"].any()


def test_deepseek_bias_missing_is_one_line(tmp_path):
    c = mf.DEEPSEEK
    state = mf.deepseek_state(mf.deepseek_tensors(c), c, True)
    del state["nnx_aux"]
    mf.save_items(tmp_path / "ck/1/items", state)
    with pytest.raises(CheckpointError, match="routed gate bias is not in the checkpoint") as e:
        jaxeval.load_model(tmp_path / "ck/1", dtype="float32", load_tokenizer=False, maxtext_config=DEEPSEEK_ARGS)
    _one_line(e)


# ---- bad input: one line each, before any array is read ----------------------------------------------------

def _one_line(exc):
    assert "\n" not in str(exc.value)


def test_folder_of_no_known_layout(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("hi")
    with pytest.raises(ConfigError) as e:
        jaxeval.load_model(tmp_path / "x")
    _one_line(e)
    for layout in ("Hugging Face", "jaxeval Orbax", "GGUF", "MaxText"):
        assert layout in str(e.value)


def test_training_state_without_params(tmp_path):
    mf.save_items(tmp_path / "ck/5/items", {"step": np.int32(5), "opt_state": {"count": np.int32(5)}})
    with pytest.raises(CheckpointError, match="training-state checkpoint without parameters") as e:
        jaxeval.load_model(tmp_path / "ck/5", maxtext_config=LLAMA_ARGS)
    _one_line(e)


def test_config_shape_disagrees_with_arrays(llama):
    root, _ = llama
    with pytest.raises(CheckpointError, match=r"query/kernel has shape \[32, 2, 4, 8\], the config implies "
                                              r"\[32, 2, 8, 8\]") as e:
        jaxeval.load_model(root / "converted/0", maxtext_config=LLAMA_ARGS.replace("head_dim=8", "head_dim=8 "
                                                                                    "base_num_query_heads=8"))
    _one_line(e)


@pytest.mark.parametrize("extra, message", [
    ("quantization=int8", "quantization='int8' is not supported"),
    ("use_multimodal=True", "use_multimodal=True is not supported"),
    ("num_vocab_tiling=4", "MaxText config key 'num_vocab_tiling' is not supported"),
    ("model_name=gpt3-52k", "model_name='gpt3-52k' is not one jaxeval reads"),
    ("attention_bias=True", "attention_bias=True is not supported for decoder_block=llama2"),
    ("final_logits_soft_cap=30.0", "final_logits_soft_cap=30.0 is not supported for decoder_block=llama2"),
    ("rope_type=yarn", "rope_type=yarn is not supported for decoder_block=llama2"),
    ("use_indexer=True", "use_indexer=True is not supported"),
    ("attention_type=local_sliding", "attention_type='local_sliding' is not supported for decoder_block=llama2"),
    (DEEPSEEK_ARGS.replace("q_lora_rank=16", "q_lora_rank=0"), "q_lora_rank=0 is DeepSeek-V2"),
])
def test_unsupported_maxtext_config(llama, extra, message):
    root, _ = llama
    with pytest.raises(ConfigError, match=message) as e:
        jaxeval.load_model(root / "converted/0", maxtext_config=f"{LLAMA_ARGS} {extra}")
    _one_line(e)


def test_preset_override_needs_override_model_config(llama):
    root, _ = llama
    with pytest.raises(ConfigError, match="requires override_model_config=True"):
        jaxeval.load_model(root / "converted/0", maxtext_config=LLAMA_ARGS.replace("override_model_config=True ", ""))


def test_scan_layers_disagreeing_with_tree(llama):
    root, _ = llama
    with pytest.raises(ConfigError, match="scan_layers=False but .* holds scanned layers"):
        jaxeval.load_model(root / "converted/0", maxtext_config=f"{LLAMA_ARGS} scan_layers=False")


def test_no_config_source(llama):
    root, _ = llama
    with pytest.raises(ConfigError, match="stores no model config"):
        jaxeval.load_model(root / "converted/0")


def test_run_yaml_and_cli_model_args(llama, tmp_path):
    """A run's YAML plus overrides, as MaxText's command line takes them, through --model_args."""
    root, hf = llama
    yml = tmp_path / "run.yml"
    yml.write_text("base_config: base.yml\nrun_name: r\nsteps: 10\nmodel_name: llama3.1-8b\n"
                   "override_model_config: true\nbase_emb_dim: 32\nbase_num_query_heads: 4\n")
    rest = "base_num_kv_heads=2 head_dim=8 vocab_size=64 base_mlp_dim=48 base_num_decoder_layers=2"
    got = params_of(jaxeval.load_model(root / "converted/0", dtype="float32", load_tokenizer=False,
                                       maxtext_config=f"{yml} {rest}"))
    want = params_of(jaxeval.load_model(hf, dtype="float32", load_tokenizer=False))
    np.testing.assert_allclose(got["['lm_head'].value"], want["['lm_head'].value"])
    from jaxeval.run.config import parse_model_args

    assert parse_model_args(f"pretrained=x,maxtext_config={yml} {rest}")["maxtext_config"] == f"{yml} {rest}"
    assert json.loads(json.dumps(LLAMA31))  # the config is plain JSON (written beside runs by users)


MESH_SCRIPT = """
import sys, jax, numpy as np, jaxeval
from flax import nnx
from tests.weights import maxtext_fixtures as mf
from tests.weights.test_maxtext_read import DEEPSEEK_ARGS, GEMMA_ARGS, params_of
root = sys.argv[1]
c = mf.GEMMA3_TEXT
mf.save_items(f"{root}/g/0/items", {"params": {"params": mf.maxtext_params(mf.gemma3_tensors(c), c, "gemma3", True)}})
mf.save_items(f"{root}/d/1/items", mf.deepseek_state(mf.deepseek_tensors(mf.DEEPSEEK), mf.DEEPSEEK, True))
for path, args in ((f"{root}/g/0", GEMMA_ARGS), (f"{root}/d/1", DEEPSEEK_ARGS),
                   (f"{root}/d/1", DEEPSEEK_ARGS + " routed_bias=False")):
    one = params_of(jaxeval.load_model(path, dtype="float32", load_tokenizer=False, maxtext_config=args))
    sharded = jaxeval.load_model(path, dtype="float32", load_tokenizer=False, maxtext_config=args, mesh="fsdp=2,tensor=2")
    name = "mla_q_b" if "deepseek" in args else "wq"
    wq = nnx.state(sharded.module, nnx.Param)["layers"][name].value
    assert "tensor" in str(wq.sharding.spec) and len(wq.addressable_shards) == 4, wq.sharding
    for name, value in params_of(sharded).items():
        np.testing.assert_array_equal(value, one[name], err_msg=name)
print("OK")
"""


@pytest.mark.slow
def test_sharded_read_equals_one_device(tmp_path):
    """On a 4-device mesh every leaf is restored into its shards and moved into the target sharding: same numbers."""
    import os
    import subprocess
    import sys

    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu",
                        "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    run = subprocess.run([sys.executable, "-c", MESH_SCRIPT, str(tmp_path)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and "OK" in run.stdout, run.stderr[-3000:]


EMBEDDED_ARGS = ("model_name=llama2-7b override_model_config=True base_emb_dim=256 base_num_query_heads=4 "
                 "base_num_kv_heads=4 base_mlp_dim=512 base_num_decoder_layers=2 head_dim=64 vocab_size=4096 "
                 "rope_max_timescale=1000000 max_position_embeddings=32768")


@pytest.fixture(scope="module")
def embedded_as_maxtext(tmp_path_factory):
    """jaxeval's embedded tiny Llama written as a MaxText llama2-block training checkpoint."""
    from jaxeval.cli import EMBEDDED_MODEL

    model = jaxeval.load_model(EMBEDDED_MODEL, dtype="float32")
    ours = nnx.to_pure_dict(nnx.state(model.module, nnx.Param))
    root = tmp_path_factory.mktemp("embedded_maxtext")
    mf.save_items(root / "checkpoints/7/items", mf.training_state(mf.from_ours(ours, model.config.head_dim), 7))
    return model, root / "checkpoints/7"


def test_tokenizer_from_flag_or_tokenizer_path(embedded_as_maxtext):
    from jaxeval.cli import EMBEDDED_MODEL

    model, ckpt = embedded_as_maxtext
    by_flag = jaxeval.load_model(ckpt, dtype="float32", maxtext_config=EMBEDDED_ARGS, tokenizer=str(EMBEDDED_MODEL))
    by_config = jaxeval.load_model(ckpt, dtype="float32", maxtext_config=f"{EMBEDDED_ARGS} tokenizer_path={EMBEDDED_MODEL}")
    text = "The quick brown fox jumps over the lazy dog."
    ids = model.tokenizer(text)["input_ids"]
    assert by_flag.tokenizer(text)["input_ids"] == ids == by_config.tokenizer(text)["input_ids"]
    assert jaxeval.load_model(ckpt, dtype="float32", maxtext_config=EMBEDDED_ARGS).tokenizer is None
    ids = np.asarray(ids)
    want = np.asarray(model.read(ids, np.arange(1, len(ids)), ids[1:]).logprobs)
    got = np.asarray(by_flag.read(ids, np.arange(1, len(ids)), ids[1:]).logprobs)
    assert np.abs(got - want).max() <= 1e-5


@pytest.mark.slow
def test_cli_run_on_a_maxtext_step(embedded_as_maxtext, tmp_path, monkeypatch):
    """`jaxeval run` end to end on a MaxText training step, config and tokenizer through --model_args."""
    from jaxeval.cli import EMBEDDED_MODEL, main

    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    _, ckpt = embedded_as_maxtext
    args = f"pretrained={ckpt},maxtext_config={EMBEDDED_ARGS},tokenizer={EMBEDDED_MODEL},dtype=float32"
    assert main(["run", "--model_args", args, "--limit", "1", "--agent_bench_sets", "facts",
                 "--output_path", str(tmp_path)]) == 0
    (results,) = tmp_path.glob("*.json")
    assert json.loads(results.read_text())["results"]


def test_validate_checks_a_maxtext_step_before_any_compute(embedded_as_maxtext, capsys):
    """`jaxeval validate` reads the MaxText config and tokenizer (no array); a bad key is one line, exit 2."""
    from jaxeval.cli import EMBEDDED_MODEL, main

    _, ckpt = embedded_as_maxtext
    flags = ["validate", "--model", str(ckpt), "--tokenizer", str(EMBEDDED_MODEL), "--agent_bench_sets", "facts",
             "--limit", "1", "--maxtext_config"]
    assert main([*flags, EMBEDDED_ARGS]) == 0
    assert "MaxText checkpoint and config valid (llama)" in capsys.readouterr().out
    assert main([*flags, f"{EMBEDDED_ARGS} attention_bias=True"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "attention_bias=True is not supported" in err[0]
