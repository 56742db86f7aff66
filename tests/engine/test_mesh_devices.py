"""Same answers on any mesh: 1 device vs 8 simulated CPU devices, and 2 processes vs 1.

JAX fixes its device count when it starts, so each check runs tests/engine/mesh_worker.py in
a subprocess with XLA_FLAGS=--xla_force_host_platform_device_count set before JAX is imported.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from mesh_worker import write_tiny_llama  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).parent / "mesh_worker.py"
MESHES = ("data=2,tensor=2,context=2", "tensor=8", "context=8")


def worker_env(devices: int, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXEVAL_")}
    env |= {"XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}", "JAX_PLATFORMS": "cpu",
            "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])}
    return env | extra


def run_worker(args, env, timeout=600) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(WORKER), *args], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-4000:]
    return done


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return write_tiny_llama(tmp_path_factory.mktemp("mesh") / "llama")


@pytest.fixture(scope="module")
def eight_devices(model_folder):
    """Results on no mesh (one device) and on each of MESHES, from one 8-device process."""
    out = model_folder.parent / "eight.json"
    run_worker([str(model_folder), str(out), "none", *MESHES], worker_env(8))
    return json.loads(out.read_text())


def assert_same(got: dict, ref: dict, where: str):
    assert "llama_logprobs" in got
    for key in set(ref) & set(got):
        if key.endswith("logprobs"):
            np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-5, err_msg=f"{where}: {key}")
    assert got["llama_top1"] == ref["llama_top1"], where
    assert got["llama_tokens"] == ref["llama_tokens"], f"{where}: greedy tokens differ"


@pytest.mark.parametrize("mesh", MESHES)
def test_read_and_generate_match_one_device(eight_devices, mesh):
    ref, got = eight_devices["none"], eight_devices[mesh]
    assert got["devices"] == 8
    assert "gemma2_chunked_logprobs" in got and ("gemma2_xla_logprobs" in got) == (mesh == "context=8")
    assert_same(got, ref, mesh)
    assert len(ref["llama_tokens"]) == 3 and all(len(t) == 8 for t in ref["llama_tokens"])
    # the Orbax copy of the weights, restored with target shardings, reads the same
    np.testing.assert_allclose(got["orbax_logprobs"], ref["llama_logprobs"], rtol=0, atol=1e-5)


def test_attention_runs_per_shard_on_stripes(eight_devices):
    """Query [B, T, H, hd] and key [B, S, KV, hd] shapes the backends saw (chunks of 256 tokens)."""
    queries = {mesh: {(q[1], q[2]) for q, _ in eight_devices[mesh]["attend_shapes"]} for mesh in ("none", *MESHES)}
    keys = {mesh: {(k[1], k[2]) for _, k in eight_devices[mesh]["attend_shapes"]} for mesh in ("none", *MESHES)}
    assert queries["none"] == {(256, 8)}
    assert queries["context=8"] == {(16, 8)}  # 256 / (2 * 8): one early and one late stripe per shard
    assert queries["tensor=8"] == {(256, 1)}
    assert queries["data=2,tensor=2,context=2"] == {(64, 4)}
    assert {kv for _, kv in keys["context=8"]} == {2}  # all K/V heads, whole sequence
    assert {kv for _, kv in keys["tensor=8"]} == {1}  # the one replicated KV head each shard's queries use
    assert {kv for _, kv in keys["data=2,tensor=2,context=2"]} == {1}  # 2 KV heads split over tensor=2
    assert keys["context=8"] == keys["none"]  # K/V gathered whole along the sequence


def test_weights_are_sharded_by_the_rules(eight_devices):
    mixed = eight_devices["data=2,tensor=2,context=2"]["shardings"]
    assert mixed["wq"] == "P(None, None, 'tensor', None)"
    assert mixed["wk"] == "P(None, None, 'tensor', None)"  # 2 KV heads split over tensor=2
    assert mixed["w_down"] == "P(None, 'tensor', None)"
    wide = eight_devices["tensor=8"]["shardings"]
    assert wide["wq"] == "P(None, None, 'tensor', None)"
    assert wide["wk"] == "P(None, None, None, None)"  # 2 KV heads < tensor=8: replicated


def test_bad_mesh_and_long_input_fail_before_compiling(model_folder):
    out = model_folder.parent / "errors.json"
    errors = json.loads(run_worker([str(model_folder), str(out), "errors"], worker_env(8)).stdout
                        .split("RESULTS ", 1)[1])["errors"]
    assert "needs 3 devices, but 8 are available" in errors["devices"]
    assert "tensor=4 does not divide the model's num_attention_heads=6" in errors["heads"]
    assert "prefill_chunk=8 must be a multiple of 2 * context = 16" in errors["chunk"]
    assert errors["read_too_long"].startswith("InputTooLongError")
    assert errors["prompt_too_long"].startswith("InputTooLongError")
    assert errors["compiled"] == [0, 0, 0, 0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_match_one(eight_devices, model_folder):
    """2 processes x 4 devices on data=2,tensor=2,context=2: same results as 1 process; process 0 alone writes."""
    mesh = MESHES[0]
    out = model_folder.parent / "multi_{process}.json"
    coordinator = f"127.0.0.1:{free_port()}"
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(model_folder), str(out), mesh], cwd=REPO,
                              env=worker_env(4, JAXEVAL_COORDINATOR=coordinator, JAXEVAL_NUM_PROCESSES="2",
                                             JAXEVAL_PROCESS_ID=str(i)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        outputs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (stdout, stderr) in zip(procs, outputs):
        assert p.returncode == 0, stderr[-4000:]
    for i, (stdout, _) in enumerate(outputs):
        got = json.loads(stdout.split("RESULTS ", 1)[1])[mesh]
        assert got["processes"] == 2 and got["devices"] == 8
        assert_same(got, eight_devices["none"], f"process {i}")
        assert_same(got, eight_devices[mesh], f"process {i} vs one process on {mesh}")
        np.testing.assert_allclose(got["orbax_logprobs"], eight_devices["none"]["llama_logprobs"], rtol=0, atol=1e-5)
    assert (model_folder.parent / "multi_0.json").is_file()
    assert not (model_folder.parent / "multi_1.json").exists()


# One model per family added with the dense families of issue 12 (tests/models/test_parity.py's tiny configs
# with 8 query heads and 2 KV heads, so tensor=8 splits the queries and replicates K/V).
MESH_FAMILIES = ("phi4-mini", "olmo2", "olmo3", "smollm3", "glm4", "glm", "granite", "mistral-nemo", "ministral",
                 "exaone4", "seed_oss", "ministral3")
FAMILY_MESHES = ("data=2,tensor=2,context=2", "tensor=8")


@pytest.fixture(scope="module")
def family_results(tmp_path_factory):
    """HF folders written by transformers (every weight perturbed), read on one device and on FAMILY_MESHES."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sys.path.insert(0, str(REPO / "tests" / "models"))
    from test_parity import BY_NAME, perturb_all_parameters

    root = tmp_path_factory.mktemp("families")
    for name in MESH_FAMILIES:
        f = BY_NAME[name]
        # head_dim as tested (the rotary dims and longrope factors stay valid); hidden 128 = 8 heads x 16
        kwargs = {**f.kwargs, "hidden_size": 128, "num_attention_heads": 8, "num_key_value_heads": 2}
        kwargs["head_dim"] = kwargs.get("head_dim", 16)
        config = getattr(transformers, f.config_class)(**kwargs)
        perturb_all_parameters(getattr(transformers, f.model_class)(config), seed=3).save_pretrained(root / name)
    out = root.parent / "families.json"
    run_worker([str(root), str(out), "families", "none", *FAMILY_MESHES], worker_env(8))
    return json.loads(out.read_text())


@pytest.mark.parametrize("mesh", FAMILY_MESHES)
@pytest.mark.parametrize("family", MESH_FAMILIES)
def test_families_match_one_device(family_results, family, mesh):
    """Fused weights split into shards, q/k norms over sharded heads, NoPE and sliding layers, multipliers:
    log-probs of a 700-token read (3 prefill chunks) within 1e-5 of one device."""
    ref, got = family_results["none"][family], family_results[mesh][family]
    diff = np.abs(np.asarray(got["logprobs"]) - np.asarray(ref["logprobs"])).max()
    print(f"\n{family} on {mesh}: max |logprob diff| vs one device {diff:.2e}")
    assert len(ref["logprobs"]) == 699 and diff <= 1e-5
    assert got["shardings"]["wq"] == "P(None, None, 'tensor', None)"
    if family.startswith("olmo"):  # the all-heads q/k norm weights follow their heads
        assert got["shardings"]["q_norm_heads"] == "P(None, 'tensor', None)"
        assert got["shardings"]["k_norm_heads"] == ("P(None, 'tensor', None)" if mesh.startswith("data")
                                                    else "P(None, None, None)")
