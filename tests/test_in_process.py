"""jaxeval.evaluate from a Flax NNX + optax training loop: the score moves as training proceeds, the
arrays stay where the loop keeps them, and a second call compiles nothing new."""

import json

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

import jaxeval
from jaxeval.api import load_tokenizer_from
from jaxeval.cli import EMBEDDED_MODEL
from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder
from tests.training_loop import FACTS, LEAF, TINY, training


class _Compiles:
    """Every XLA compile in the process while active (JAX's own monitoring event)."""

    EVENT = "/jax/core/compile/backend_compile_duration"

    def __init__(self):
        self.count, self.active = 0, False
        jax.monitoring.register_event_duration_secs_listener(self._seen)

    def _seen(self, event, duration, **kwargs):
        if self.active and event == self.EVENT:
            self.count += 1


def test_evaluate_from_a_training_loop_scores_move_and_compile_once(tmp_path):
    config = config_from_hf(TINY)
    tokenizer = load_tokenizer_from(EMBEDDED_MODEL)
    compiles, scores, counts = _Compiles(), [], []
    for step, model in training(40, 20):
        compiles.active = step > 0  # the first call compiles the engine's steps; no later one may
        before = model.embed.get_value()
        results = jaxeval.evaluate(params=model, config=config, tokenizer=tokenizer, tasks="agent_bench",
                                   limit=1, flags=FACTS, step=step)
        compiles.active = False
        assert model.embed.get_value() is before  # the training state is untouched
        assert results["step"] == step and results["live"]["resharded"] == 0
        assert results["model"]["path"] == f"live-step{step}" and results["journal"] is None
        scores.append(results["results"][LEAF]["mean_logprob"])
        counts.append(results["timing"]["compiles"])
    assert compiles.count == 0, f"{compiles.count} XLA compiles in the later evaluate calls"
    assert counts[0] == counts[1] == counts[2] and counts[0]["prefill_chunk"] >= 1  # per process, so far
    assert scores[0] < scores[1] - 5 < scores[2] - 10, scores  # training on the documents lifts the answers' log p


def test_evaluate_matches_a_run_of_the_same_weights(tmp_path):
    """The in-process dict scores what `jaxeval run` scores on the same weights saved as a checkpoint."""
    from jaxeval.cli import main
    from jaxeval.weights.orbax import save_checkpoint

    model = Decoder(config_from_hf(TINY), rngs=nnx.Rngs(3))
    save_checkpoint(tmp_path / "m", model.params(), TINY, "float32", tokenizer_from=EMBEDDED_MODEL)
    assert main(["run", "--model", str(tmp_path / "m"), "--tasks", "agent_bench", "--limit", "1",
                 "--agent_bench_sets", "facts", "--out", str(tmp_path / "run.json")]) == 0
    ran = json.loads((tmp_path / "run.json").read_text())
    live = jaxeval.evaluate(params=model.params(), config=TINY, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS)
    assert live["results"] == ran["results"]
    assert live["headline"] == ran["headline"]


def test_evaluate_keeps_results_per_step_and_resumes(tmp_path):
    model = Decoder(config_from_hf(TINY), rngs=nnx.Rngs(1))
    first = jaxeval.evaluate(params=model.params(), config=TINY, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS,
                             step=7, output_path=str(tmp_path))
    (written,) = tmp_path.glob("live-step7-*.json")
    assert json.loads(written.read_text())["results"] == first["results"]
    again = jaxeval.evaluate(params=model.params(), config=TINY, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS,
                             step=7, output_path=str(tmp_path))
    assert again["timing"]["resumed_records"] > 0 and again["results"] == first["results"]


def test_evaluate_names_a_mis_shaped_parameter():
    params = Decoder(config_from_hf(TINY), rngs=nnx.Rngs(0)).params()
    params["layers"]["wq"] = jnp.zeros((1, 32, 2, 8))
    with pytest.raises(CheckpointError, match=r"layers/wq has shape \[1, 32, 2, 8\], expected \[1, 32, 2, 16\]"):
        jaxeval.evaluate(params=params, config=TINY, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS)
    del params["layers"]["wq"]
    with pytest.raises(CheckpointError, match=r"layers/wq is missing \(expected shape \[1, 32, 2, 16\]\)"):
        jaxeval.evaluate(params=params, config=TINY, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS)
    with pytest.raises(ConfigError, match="step= is needed"):
        jaxeval.evaluate(params=params, config=TINY, tokenizer=EMBEDDED_MODEL, output_path="x")
