"""What every generation cache kind serves: one batch of prompts, and the contract a kind keeps.

A cache kind is a registered pytree type (its arrays are the jitted steps' donated argument)
with its own
- init(config, runtime, batch), a classmethod: the empty cache of the batch's rows;
- prefill(params, config, runtime, batch): the prompts in, the first new tokens out;
- step(params, config, runtime, batch, tokens, positions, fed): one decode step;
prefill and step return (next tokens int32 [B], positions int32 [B], the cache). The kinds:
kv_cache.KVCache (exact; streaming's masked form), kv_cache.QuantizedKVCache (int8 / fp8),
snapkv.SnapKVMaskCache (SnapKV's masked form), bounded_kv.StreamingCache and
bounded_kv.SnapKVCache (the bounded caches), hybrid_generate.HybridDecodeCache (Gated DeltaNet
states and K/V). generate.cache_type picks one per run; nothing else branches on the kind.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.buckets import chunk_size, length_bucket
from jaxeval.engine.sampling import prompt_keys
from jaxeval.models.rope import RopeTables, length_dependent, row_tables
from jaxeval.models.sharding import host_array, replicated


@dataclasses.dataclass
class DecodeBatch:
    """One engine batch: its prompts, shapes and the sampling inputs every step takes (on the device)."""

    prompts: list  # the real prompts, int32 arrays; rows past them are padding (a one-token prompt, token 0)
    rows: int  # B: the prompts padded to a power of two
    lengths: np.ndarray  # int32 [B]: prompt lengths (padding rows: 1)
    cache_len: int  # S: the length-ladder rung holding the longest prompt plus the new tokens
    chunk: int  # prefill tokens per step
    max_new_tokens: int
    keys: object  # [B] typed PRNG keys (sampling.prompt_keys)
    temperature: object
    top_p: object
    bias: object | None  # float32 [V] added to the logits of the first suppressed_steps steps, or None
    suppressed_steps: int
    config: object
    mesh: object | None
    fixed_rope: RopeTables | None = None  # the rows' tables when the rope does not depend on the length

    @property
    def longest(self) -> int:
        return int(self.lengths.max())

    @property
    def last_tokens(self) -> np.ndarray:
        last = np.zeros(self.rows, np.int32)
        last[:len(self.prompts)] = [p[-1] for p in self.prompts]
        return last

    def rope(self, seq_lens) -> RopeTables:
        """Per-row tables for sequences of seq_lens int [rows] tokens, on the device(s)."""
        return RopeTables(*(host_array(t, self.mesh) for t in row_tables(self.config, seq_lens)))

    def sampling(self, fed: int) -> tuple:
        """(keys, temperature, top_p, rope, bias) of the step after `fed` decoded tokens: every row's
        sequence then holds its prompt plus fed tokens (transformers recomputes a length-dependent
        rope at every step)."""
        rope = self.fixed_rope if self.fixed_rope is not None else self.rope(self.lengths + fed)
        return self.keys, self.temperature, self.top_p, rope, self.bias if fed < self.suppressed_steps else None


def batch_bucket(n: int) -> int:
    """Rows of a decode batch: the next power of two >= n."""
    rows = 1
    while rows < n:
        rows *= 2
    return rows


def new_batch(config, runtime, prompts, prompt_ids, max_new_tokens: int, *, seed, temperature, top_p,
              suppress=(None, 0)) -> DecodeBatch:
    """The DecodeBatch of prompts (int32 arrays) whose request indices are prompt_ids (their draws' keys).

    suppress: (float32 [V] logit bias or None, the number of first steps it applies to)."""
    mesh = runtime.mesh
    n, b = len(prompts), batch_bucket(len(prompts))
    lengths = np.ones(b, np.int32)  # padding rows: a one-token prompt (token 0); their output is dropped
    lengths[:n] = [p.size for p in prompts]
    longest = int(lengths.max())
    cache_len = length_bucket(longest + max_new_tokens - 1)  # the last new token is never fed back
    chunk = chunk_size(length_bucket(longest), runtime.prefill_chunk)
    while cache_len % chunk:  # chunks must tile the cache (always true on the ladder; kept for safety)
        chunk //= 2
    ids = np.zeros(b, np.int32)
    ids[:n] = prompt_ids
    if mesh is None:
        keys = prompt_keys(np.uint32(seed), jnp.asarray(ids))
    else:  # every process builds the same replicated keys
        keys = jax.jit(prompt_keys, out_shardings=replicated(mesh))(host_array(np.uint32(seed), mesh),
                                                                    host_array(ids, mesh))
    bias, steps = suppress
    batch = DecodeBatch(list(prompts), b, lengths, cache_len, chunk, max_new_tokens, keys,
                        host_array(np.float32(temperature), mesh), host_array(np.float32(top_p), mesh),
                        None if bias is None else host_array(bias, mesh), steps, config, mesh)
    if not length_dependent(config):
        batch.fixed_rope = batch.rope(lengths)  # the same tables at every step
    return batch
