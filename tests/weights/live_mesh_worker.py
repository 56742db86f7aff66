"""Run by tests/weights/test_live.py with 4 simulated CPU devices: jaxeval.evaluate on parameters a training
loop placed on a jaxeval mesh (kept where they are) and on another mesh of its own axes (re-sharded)."""

import json
import sys

import jax
from flax import nnx
from jax.sharding import NamedSharding, PartitionSpec

import jaxeval
from jaxeval.cli import EMBEDDED_MODEL
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder
from jaxeval.models.mesh import make_mesh
from jaxeval.models.param_layout import param_axes, param_shapes
from jaxeval.models.sharding import param_shardings

TINY = dict(model_type="llama", vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=16384, eos_token_id=0)
FACTS = {"agent_bench_sets": "facts"}

config = config_from_hf(TINY)
params = Decoder(config, rngs=nnx.Rngs(0)).params()
mesh = make_mesh("tensor=2,context=2", num_heads=2, num_kv_heads=2)
placed = jax.device_put(params, param_shardings(param_shapes(config), mesh, param_axes(config)))
theirs = jax.sharding.Mesh(jax.devices(), ("batch",))  # a trainer's own 1-axis mesh: replicated weights
foreign = jax.device_put(params, NamedSharding(theirs, PartitionSpec()))
out = {}
for label, tree in (("one_device", jax.device_put(params, jax.devices()[0])), ("jaxeval_mesh", placed),
                    ("jaxeval_mesh_again", placed), ("foreign_mesh", foreign)):
    r = jaxeval.evaluate(params=tree, config=config, tokenizer=EMBEDDED_MODEL, limit=1, flags=FACTS)
    out[label] = {"score": r["results"]["agent_bench/facts/8k"]["mean_logprob"], "live": r["live"],
                  "compiles": r["timing"]["compiles"]}
json.dump(out, sys.stdout)
