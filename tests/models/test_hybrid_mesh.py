"""The hybrids (Qwen3.5, Qwen3.5-MoE) on a mesh: heads, Gated DeltaNet heads, MLP and expert widths split over
`tensor`; the context axis refused with one error (a GDN state runs through the sequence in order)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from jaxeval.errors import ConfigError
from jaxeval.models.config import config_from_hf
from jaxeval.models.hybrid_layout import check_hybrid_mesh, hybrid_param_axes, hybrid_param_shapes
from jaxeval.models.mesh import MeshError, auto_mesh_shape
from jaxeval.models.sharding import RULES

LIN, FULL = "linear_attention", "full_attention"
# 8 query heads, 8 GDN key heads and 16 value heads: tensor=8 splits every kind of head
BASE = dict(vocab_size=256, hidden_size=64, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2,
            head_dim=16, linear_num_key_heads=8, linear_num_value_heads=16, linear_key_head_dim=8,
            linear_value_head_dim=8, linear_conv_kernel_dim=4, layer_types=[LIN, LIN, FULL],
            max_position_embeddings=8192, eos_token_id=2,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})
DENSE = {**BASE, "intermediate_size": 96}
MOE = {**BASE, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
       "shared_expert_intermediate_size": 48}


@pytest.mark.parametrize("model_type,raw", [("qwen3_5_text", DENSE), ("qwen3_5_moe_text", MOE)])
def test_every_parameter_has_logical_axes_of_its_rank(model_type, raw):
    c = config_from_hf({**raw, "model_type": model_type})
    shapes, axes = hybrid_param_shapes(c), hybrid_param_axes(c)
    flat = lambda d: {f"{k}/{n}" if isinstance(v, dict) else k: w for k, v in d.items()
                      for n, w in (v.items() if isinstance(v, dict) else [(None, v)])}
    shapes, axes = flat(shapes), flat(axes)
    assert shapes.keys() == axes.keys()
    assert all(len(shapes[k]) == len(axes[k]) and set(axes[k]) <= RULES.keys() for k in shapes)
    assert axes["linear_layers/wv"][2] == "gdn_v_heads" and axes["linear_layers/conv_q"][2] == "gdn_k_heads"


def test_context_axis_is_refused_and_auto_meshes_go_data_parallel():
    c = config_from_hf({**DENSE, "model_type": "qwen3_5_text"})
    check_hybrid_mesh(c, None)
    check_hybrid_mesh(c, types.SimpleNamespace(shape={"data": 2, "fsdp": 1, "tensor": 4, "context": 1}))
    with pytest.raises(MeshError, match="model_type='qwen3_5_text' .*does not run context-parallel.*context=2"):
        check_hybrid_mesh(c, types.SimpleNamespace(shape={"data": 1, "fsdp": 1, "tensor": 4, "context": 2}))
    assert issubclass(MeshError, ConfigError)
    assert auto_mesh_shape(16, 8, 2, context_parallel=False) == {"data": 2, "fsdp": 1, "expert": 1, "tensor": 8, "context": 1}
    assert auto_mesh_shape(16, 8, 2) == {"data": 1, "fsdp": 1, "expert": 1, "tensor": 8, "context": 2}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from test_qwen3_5 import perturb

    out = {}
    for name, cls, config in (("qwen3_5", transformers.Qwen3_5ForCausalLM, transformers.Qwen3_5TextConfig(**DENSE)),
                              ("qwen3_5_moe", transformers.Qwen3_5MoeForCausalLM,
                               transformers.Qwen3_5MoeTextConfig(**MOE))):
        torch.manual_seed(0)
        out[name] = tmp_path_factory.mktemp(name)
        perturb(cls(config)).save_pretrained(out[name])
    return out


SCRIPT = """
import json, sys, numpy as np
import jaxeval
from jaxeval.errors import ConfigError
ids = np.random.default_rng(5).integers(3, 256, 600)
pos = np.arange(1, 600)
kw = dict(dtype="float32", load_tokenizer=False, prefill_chunk=128)
results = {}
for name, folder in json.loads(sys.argv[1]).items():
    one, mesh = jaxeval.load_model(folder, **kw), jaxeval.load_model(folder, mesh="tensor=8", **kw)
    a, b = one.read(ids, pos, ids[pos]), mesh.read(ids, pos, ids[pos])
    prompts = [ids[:50].tolist(), ids[100:130].tolist()]
    same = [x.tokens == y.tokens for x, y in zip(one.generate(prompts, 8), mesh.generate(prompts, 8))]
    try:
        jaxeval.load_model(folder, mesh="tensor=4,context=2", **kw)
        refusal = None
    except ConfigError as e:
        refusal = str(e)
    results[name] = {"diff": float(np.abs(a.logprobs - b.logprobs).max()), "top1": bool((a.top1 == b.top1).all()),
                     "tokens": all(same), "wv": str(mesh.module.params()["linear_layers"]["wv"].sharding.spec),
                     "refusal": refusal}
print("RESULTS", json.dumps(results))
"""


@pytest.mark.slow  # ~2 min: two models, each compiled on one device and on eight
def test_tensor_parallel_on_eight_devices_equals_one(folders):
    """tensor=8 simulated devices (a subprocess: JAX fixes its device count at start): reads and greedy tokens as
    on one device, GDN weights split by head; a context axis refused before anything compiles."""
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    arg = json.dumps({name: str(folder) for name, folder in folders.items()})
    out = subprocess.run([sys.executable, "-c", SCRIPT, arg], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    results = json.loads(out.stdout.split("RESULTS ", 1)[1])
    for name, got in results.items():
        print(f"{name} tensor=8 vs one device: max |d log p| {got['diff']:.2e}")
        assert got["diff"] < 1e-5 and got["top1"] and got["tokens"], name
        assert got["wv"] == "P(None, None, 'tensor', None)", got["wv"]
        assert "does not run context-parallel" in got["refusal"], got["refusal"]
