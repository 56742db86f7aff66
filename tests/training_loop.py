"""A tiny Flax NNX + optax training loop (seconds on CPU) on the embedded agent_bench documents, for the
tests of in-process evaluation and of step series: jaxeval's own Decoder, 1 layer, 32 wide."""

import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxeval.api import load_tokenizer_from
from jaxeval.benchmarks.agent_bench.data import SHIPPED_DATA, load_split
from jaxeval.cli import EMBEDDED_MODEL
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder

TINY = dict(model_type="llama", vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16384, eos_token_id=0)
FACTS = {"agent_bench_sets": "facts"}  # one set at 8k: the evaluations stay a few seconds each
LEAF = "agent_bench/facts/8k"


def _train_step():
    @nnx.jit
    def step(model, optimizer, batch):
        def loss_fn(model):
            logits = model(batch[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, batch[:, 1:]).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    return step


def training(steps: int, every: int, seed: int = 0):
    """Train for `steps` steps on windows of a facts document; yield (step, model) at every `every`-th."""
    tokenizer = load_tokenizer_from(EMBEDDED_MODEL)
    ids = np.asarray(tokenizer(load_split(SHIPPED_DATA, "facts", "8k")[1].text)["input_ids"])
    model = Decoder(config_from_hf(TINY), rngs=nnx.Rngs(seed))
    optimizer = nnx.Optimizer(model, optax.adam(3e-3), wrt=nnx.Param)
    train_step, rng = _train_step(), np.random.default_rng(seed)
    for step in range(steps + 1):
        starts = rng.integers(0, len(ids) - 129, 8)
        train_step(model, optimizer, jnp.asarray(np.stack([ids[s:s + 129] for s in starts])))
        if step % every == 0:
            yield step, model
