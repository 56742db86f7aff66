"""engine.compare: a model against itself (KL 0, agreement 1, the read's numbers) and against a
perturbed copy (KL > 0, equal to the KL of full-forward softmaxes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxeval
from jaxeval.api import load_model
from jaxeval.models.decoder import forward_logits

TINY = Path(jaxeval.__file__).parent / "assets" / "tiny_llama"


@pytest.fixture(scope="module")
def model():
    return load_model(TINY, "float32", attention="chunked", prefill_chunk=256, load_tokenizer=False)


@pytest.fixture(scope="module")
def perturbed():
    copy = load_model(TINY, "float32", attention="chunked", prefill_chunk=256, load_tokenizer=False)
    noise = jax.random.normal(jax.random.PRNGKey(0), copy._params["lm_head"].shape) * 0.05
    copy._params = {**copy._params, "lm_head": copy._params["lm_head"] + noise.astype(copy._params["lm_head"].dtype)}
    return copy


IDS = np.random.default_rng(3).integers(1, 4096, 600)
POSITIONS = np.arange(1, 600)


def test_a_model_against_itself(model):
    got = model.compare(model, IDS, POSITIONS)
    np.testing.assert_allclose(got["kl"], 0.0, atol=1e-6)
    assert got["agree"].min() == 1.0 and np.array_equal(got["top1"], got["ref_top1"])
    read = model.read(IDS, POSITIONS, IDS[POSITIONS])
    np.testing.assert_allclose(got["logprob"], read.logprobs, atol=1e-5)
    assert np.array_equal(got["top1"], (read.top1 == IDS[POSITIONS]).astype(np.float32))


def test_against_a_perturbed_copy_kl_is_that_of_the_full_distributions(model, perturbed):
    got = model.compare(perturbed, IDS, POSITIONS)
    assert got["kl"].min() > 0 and got["agree"].mean() < 1.0
    logp = jax.nn.log_softmax(forward_logits(model._params, model.config, jnp.asarray(IDS)[None])[0], -1)
    ref = jax.nn.log_softmax(forward_logits(perturbed._params, perturbed.config, jnp.asarray(IDS)[None])[0], -1)
    rows = POSITIONS - 1
    kl = np.asarray(jnp.sum(jnp.exp(ref) * (ref - logp), -1))[rows]
    np.testing.assert_allclose(got["kl"], kl, rtol=1e-3, atol=1e-6)
    agree = np.asarray(jnp.argmax(ref, -1) == jnp.argmax(logp, -1))[rows]
    assert np.array_equal(got["agree"].astype(bool), agree)


def test_a_different_vocabulary_is_refused(model):
    from jaxeval.engine.compare import compare_reads
    from jaxeval.errors import ConfigError

    other = {**model.read_args(), "config": dataclasses.replace(model.config, vocab_size=4000), "path": "other"}
    with pytest.raises(ConfigError, match="same vocabulary"):
        compare_reads(model.read_args(), other, IDS, POSITIONS)


@pytest.mark.long
def test_16k_positions_against_itself_and_a_perturbed_copy(model, perturbed):
    ids = np.random.default_rng(5).integers(1, 4096, 16_400)
    positions = np.arange(1, ids.size)
    itself = model.compare(model, ids, positions)
    read = model.read(ids, positions, ids[positions])
    np.testing.assert_allclose(itself["logprob"], read.logprobs, atol=1e-4)
    assert np.abs(itself["kl"]).max() < 1e-5 and itself["agree"].min() == 1.0
    other = model.compare(perturbed, ids, positions)
    assert other["kl"].min() > 0
    # rows spread over the whole text: the KL of softmaxes of final-norm states times each LM head
    rows = np.linspace(0, positions.size - 1, 48).astype(int)
    states = model.final_states(ids, positions[rows] - 1)
    ref_states = perturbed.final_states(ids, positions[rows] - 1)
    logp = jax.nn.log_softmax(jnp.asarray(states) @ model._params["lm_head"], -1)
    ref = jax.nn.log_softmax(jnp.asarray(ref_states) @ perturbed._params["lm_head"], -1)
    kl = np.asarray(jnp.sum(jnp.exp(ref) * (ref - logp), -1))
    np.testing.assert_allclose(other["kl"][rows], kl, rtol=1e-3, atol=1e-6)
