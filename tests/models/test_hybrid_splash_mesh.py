"""A hybrid's full-attention layers with splash on a mesh: the kernel runs per shard in the decoder's
shard_map (XLA cannot partition a Mosaic kernel), equal to the same chunk on one device. On the CPU
splash runs in Pallas interpret mode; tests/aot compiles it for a TPU mesh as Mosaic."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, numpy as np, jax, jax.numpy as jnp
from jaxeval.models import hybrid
from jaxeval.models.config import config_from_hf
from jaxeval.models.mesh import make_mesh
from jaxeval.models.param_layout import param_axes, param_shapes
from jaxeval.models.sharding import param_shardings

LIN, FULL = "linear_attention", "full_attention"
c = config_from_hf(dict(model_type="qwen3_5_text", vocab_size=256, hidden_size=128, intermediate_size=256,
    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=128, linear_num_key_heads=4,
    linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32, linear_conv_kernel_dim=4,
    layer_types=[LIN, FULL], max_position_embeddings=4096, eos_token_id=2,
    rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25}))
rng = np.random.default_rng(0)
shapes = param_shapes(c)
params = jax.tree.map(lambda s: jnp.asarray(rng.normal(0, 0.05, s), jnp.float32), shapes,
                      is_leaf=lambda s: isinstance(s, tuple))
ids = jnp.asarray(rng.integers(3, 256, (2, 256)), jnp.int32)

def two_chunks(params, mesh):
    cache = hybrid.new_cache(c, 2, 512, jnp.float32, mesh)
    outs = []
    for start in (0, 256):  # the second chunk attends to the first's keys through the cache
        x, cache = jax.jit(lambda p, i, s, k: hybrid.prefill(p, c, i, s, k, "splash", mesh=mesh))(
            params, ids, jnp.int32(start), cache)
        outs.append(np.asarray(x))
    return np.stack(outs), np.asarray(cache.k)

one, one_k = two_chunks(params, None)
mesh = make_mesh("data=2,tensor=2", devices=jax.devices()[:4], num_heads=c.num_heads, num_kv_heads=c.num_kv_heads,
                 context_parallel=False)
placed = jax.device_put(params, param_shardings(shapes, mesh, param_axes(c)))
split, split_k = two_chunks(placed, mesh)
print("RESULTS", json.dumps({"x": float(np.abs(one - split).max()), "k": float(np.abs(one_k - split_k).max()),
                             "scale": float(np.abs(one).max())}))
"""


@pytest.mark.slow  # ~1-3 min: splash in interpret mode
def test_hybrid_splash_on_a_mesh_equals_one_device():
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.split("RESULTS ", 1)[1])
    assert got["scale"] > 0.1 and got["x"] < 1e-5 * max(1.0, got["scale"]) and got["k"] < 1e-5, got
