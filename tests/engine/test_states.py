"""final_states: the read path's trunk with the final norm in place of the LM head."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import jaxeval
from jaxeval.api import load_model
from jaxeval.models.decoder import embed_tokens, final_norm, run_layers

TINY = Path(jaxeval.__file__).parent / "assets" / "tiny_llama"


@pytest.fixture(scope="module")
def model():
    return load_model(TINY, "float32", attention="chunked", prefill_chunk=256, load_tokenizer=False)


def reference_states(model, ids):
    """Final-norm states of every position from one full forward (no cache, no chunks)."""
    params, c = model.module.params(), model.config
    x = embed_tokens(params, c, jnp.asarray(ids)[None])
    x, _ = run_layers(params, c, x, jnp.arange(len(ids)), backend="xla")
    return np.asarray(final_norm(params, c, x[0]))


def test_states_equal_a_full_forward_across_chunks(model):
    ids = np.random.default_rng(0).integers(0, model.config.vocab_size, 700)  # three 256-token chunks
    rows = [0, 255, 256, 511, 699]
    got = model.final_states(ids, rows)
    assert got.shape == (5, model.config.hidden_size) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference_states(model, ids)[rows], atol=2e-5)


def test_a_state_ignores_the_tokens_after_it(model):
    ids = np.random.default_rng(1).integers(0, model.config.vocab_size, 300)
    longer = np.concatenate([ids, np.random.default_rng(2).integers(0, model.config.vocab_size, 200)])
    np.testing.assert_allclose(model.final_states(longer, [299]), model.final_states(ids, [299]), atol=1e-6)


def test_rows_outside_the_text_are_refused(model):
    with pytest.raises(ValueError, match="outside the 4 tokens"):
        model.final_states([1, 2, 3, 4], [4])


def test_states_on_a_mesh_equal_one_device():
    """8 simulated devices (a subprocess: JAX fixes its device count at start), tensor and context parallel."""
    script = f"""
import json, numpy as np
from jaxeval.api import load_model
ids = np.random.default_rng(0).integers(0, 4096, 700)
kw = dict(dtype="float32", prefill_chunk=256, load_tokenizer=False)
one = load_model({str(TINY)!r}, **kw).final_states(ids, [10, 699])
mesh = load_model({str(TINY)!r}, mesh="tensor=2,context=4", **kw).final_states(ids, [10, 699])
print(json.dumps(float(np.abs(one - mesh).max())))
"""
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) < 1e-5
