"""Quantized weights on a device mesh: the same model quantized at load (int8, int4, fp8) reads and
generates the same on 8 simulated CPU devices as on one (log-probs within 1e-5, same greedy tokens), with
the codes and scales sharded along the dense weight's logical axes (jaxeval/weights/quant_sharding.py).

JAX fixes its device count when it starts: the check runs in a subprocess (tests/engine/mesh_worker.py's
tiny Llama folder and environment)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from mesh_worker import write_tiny_llama  # noqa: E402
from test_mesh_devices import REPO, worker_env  # noqa: E402

SCRIPT = """
import json, sys
import jax, numpy as np
import jaxeval
from jaxeval.models import quant
folder, quantize = sys.argv[1], sys.argv[2]
ids = np.random.default_rng(5).integers(3, 128, 300)
pos = np.arange(1, 300)
kw = dict(dtype="float32", load_tokenizer=False, prefill_chunk=128, quantize=quantize, quant_group=16)
one = jaxeval.load_model(folder, **kw)
mesh = jaxeval.load_model(folder, mesh="data=2,tensor=2,context=2", **kw)
wq, w_down = mesh.module.params()["layers"]["wq"], mesh.module.params()["layers"]["w_down"]
assert quant.is_quantized(wq) and quant.is_quantized(w_down), type(wq)
split = {name: str(w.q.sharding.spec) for name, w in (("wq", wq), ("w_down", w_down))}
a, b = one.read(ids, pos, ids[pos]), mesh.read(ids, pos, ids[pos])
prompts = [ids[:50].tolist(), ids[100:130].tolist()]
same = [x.tokens == y.tokens for x, y in zip(one.generate(prompts, 6), mesh.generate(prompts, 6))]
print(json.dumps({"diff": float(np.abs(a.logprobs - b.logprobs).max()), "top1": bool((a.top1 == b.top1).all()),
                  "tokens": all(same), "split": split, "devices": len(jax.devices()),
                  "label": mesh.quantization}))
"""


@pytest.mark.parametrize("quantize", ["int4", pytest.param("int8", marks=pytest.mark.slow),
                                      pytest.param("fp8", marks=pytest.mark.slow)])
def test_quantized_weights_on_a_mesh_equal_one_device(tmp_path, quantize):
    folder = write_tiny_llama(tmp_path / "llama")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(folder), quantize], env=worker_env(8), cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["devices"] == 8 and got["label"] == ("int4-g16" if quantize == "int4" else quantize)
    assert got["diff"] <= 1e-5 and got["top1"] and got["tokens"], got
    # the codes split as the dense weights: wq [L, D, H, hd] heads over tensor, w_down [L, F, D] mlp rows
    assert "tensor" in got["split"]["wq"] and "tensor" in got["split"]["w_down"], got["split"]
