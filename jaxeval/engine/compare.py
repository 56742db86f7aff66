"""Two models' next-token distributions compared at the read positions of one text.

Each model's trunk runs once over the text (jaxeval.engine.states.gathered_hidden: the chunked
read path, the last layer's state gathered at the read rows); then one jitted head projects both
models' rows block by block in float32, as read_head does (jaxeval.engine.read.head_rows: about
32 MiB of logits per block and model), and reduces each row to five numbers. [sequence, vocab] is
never built: per block [rows, vocab] twice, then [rows].

Per read position p (predicting ids[p] from ids[:p]):
    logprob    log p_model(ids[p])
    top1       argmax p_model == ids[p]
    ref_top1   argmax p_reference == ids[p]
    agree      argmax p_model == argmax p_reference
    kl         KL(p_reference || p_model) = sum_v p_ref(v) (log p_ref(v) - log p_model(v)), in nats
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.read import check_read_request, head_rows
from jaxeval.engine.states import gathered_hidden
from jaxeval.errors import ConfigError
from jaxeval.models.decoder import final_logits


@functools.partial(jax.jit, static_argnames=("config", "ref_config"))
def compare_head(params, ref_params, hidden, ref_hidden, tokens, *, config, ref_config):
    """hidden, ref_hidden [K, D] (before the final norm), tokens int [K] -> five float32 [K] rows."""
    k, d = hidden.shape
    rows = head_rows(k, config.vocab_size)

    def block(args):
        h, r, t = args
        logp = jax.nn.log_softmax(final_logits(params, config, h), axis=-1)  # [rows, V] float32
        ref_logp = jax.nn.log_softmax(final_logits(ref_params, ref_config, r), axis=-1)
        top, ref_top = jnp.argmax(logp, axis=-1), jnp.argmax(ref_logp, axis=-1)
        kl = jnp.sum(jnp.exp(ref_logp) * (ref_logp - logp), axis=-1)
        gold = jnp.take_along_axis(logp, t[:, None], axis=-1)[:, 0]
        return jnp.stack([gold, (top == t).astype(jnp.float32), (ref_top == t).astype(jnp.float32),
                          (top == ref_top).astype(jnp.float32), kl], axis=0)

    out = jax.lax.map(block, (hidden.reshape(k // rows, rows, d), ref_hidden.reshape(k // rows, rows, -1),
                              tokens.reshape(k // rows, rows)))  # [blocks, 5, rows]
    return jnp.transpose(out, (1, 0, 2)).reshape(5, k)


FIELDS = ("logprob", "top1", "ref_top1", "agree", "kl")


def compare_reads(model: dict, reference: dict, ids, positions) -> dict[str, np.ndarray]:
    """FIELDS -> float32 [K] at each read position. model, reference: {"params", "config", "backend",
    "prefill_chunk_len", "dtype", "mesh", "path"} (jaxeval.api.Model.read_args); one device or one mesh."""
    config, ref_config = model["config"], reference["config"]
    if config.vocab_size != ref_config.vocab_size:
        raise ConfigError(f"--reference {reference['path']}: a vocabulary of {ref_config.vocab_size} ids, the model's "
                          f"has {config.vocab_size}; a KL needs the same vocabulary")
    ids, positions, tokens = check_read_request(ids, positions, np.asarray(ids)[np.asarray(positions)],
                                                config.vocab_size)
    hidden = [gathered_hidden(m["params"], m["config"], ids, positions - 1, backend=m["backend"],
                              prefill_chunk_len=m["prefill_chunk_len"], dtype=m["dtype"], mesh=m["mesh"],
                              kv_cache=m.get("kv_cache"))
              for m in (model, reference)]
    k = hidden[0][1]
    padded = np.zeros(hidden[0][0].shape[0], np.int32)
    padded[:k] = tokens[:, 0]
    out = np.asarray(compare_head(model["params"], reference["params"], hidden[0][0], hidden[1][0],
                                  jnp.asarray(padded), config=config, ref_config=ref_config))
    return {name: out[i, :k] for i, name in enumerate(FIELDS)}
