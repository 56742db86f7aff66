"""How a model runs, apart from its weights and its shape: one frozen value, the jitted functions'
static argument. ModelConfig says what the model is (from its checkpoint); Runtime says how this
run executes it (the user's flags). Two runs of one checkpoint with different Runtimes compile
separately and share nothing else.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


@dataclasses.dataclass(frozen=True)
class Runtime:
    attention: str = "chunked"  # the attention backend's name (jaxeval.models.attention registry)
    prefill_chunk: int = 2048  # tokens per prefill step (the last bucket may be shorter)
    dtype: str = "bfloat16"  # activations and caches: "float32" or "bfloat16"
    mesh: object | None = None  # jax.sharding.Mesh the params are sharded over; None: one device
    kv_cache: object | None = None  # jaxeval.models.kv_policy.KVPolicy; None: the exact cache

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"Runtime.dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if int(self.prefill_chunk) < 1:
            raise ValueError(f"Runtime.prefill_chunk must be >= 1, got {self.prefill_chunk!r}")

    @property
    def jnp_dtype(self):
        return DTYPES[self.dtype]
