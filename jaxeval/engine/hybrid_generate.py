"""Generation steps of the hybrid decoders (Qwen3.5): its HybridCache is the decode cache.

The batch cache is jaxeval.models.hybrid.HybridCache with every leaf [layers, rows, ...]: the full
layers' K/V [Lf, B, S, KV, hd] and the Gated DeltaNet layers' conv and recurrent states [Ll, B, ...].
Prefill runs one prompt chunk into its row; the chunk's padding past the prompt is kept out of the
GDN states (their `lengths`), while its K/V land past the prompt where decode overwrites them before
any query sees them. Decode is written for one row (jaxeval.models.hybrid.decode_row) and vmapped
over the rows; the GDN layers step their recurrent form, as transformers does for one new token, and
the full layers' new K/V are written once per step after the rows (decode_row.write_step).
On a mesh (data, fsdp, tensor; never context: jaxeval.models.hybrid_layout.check_hybrid_mesh) the
steps keep the cache in the rules' shardings and XLA partitions the layers from them.
HybridDecodeCache is the generation cache kind (jaxeval.engine.decode_cache) around it.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.decode_row import write_step
from jaxeval.engine.sampling import choose_tokens
from jaxeval.models import hybrid
from jaxeval.models.hybrid_layout import check_hybrid_mesh
from jaxeval.models.rope import RopeTables, rope_tables
from jaxeval.models.sharding import constrain, host_array


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def prefill_hybrid_row(params, cache, chunk_ids, start, row, valid, rope, *, config, runtime):
    """Run chunk_ids int [1, C] (positions start ..) into row `row` of the cache; valid int scalar: how many
    of the chunk's tokens are the prompt's (the rest is padding). rope: RopeTables of the prompt."""
    take = lambda a: jax.lax.dynamic_slice_in_dim(a, row, 1, axis=1)
    _, new = hybrid.prefill(params, config, chunk_ids, start, jax.tree.map(take, cache), runtime.attention, rope,
                            lengths=valid[None], mesh=runtime.mesh)
    put = lambda a, n: jax.lax.dynamic_update_slice_in_dim(a, n.astype(a.dtype), row, axis=1)
    return hybrid.constrain_cache(jax.tree.map(put, cache, new), runtime.mesh)


@functools.partial(jax.jit, static_argnames=("config", "runtime"), donate_argnums=(1,))
def decode_hybrid_step(params, cache, tokens, positions, keys, temperature, top_p, rope, suppress=None, *, config,
                       runtime):
    """jaxeval.engine.kv_cache.decode_step for a hybrid: feed tokens int [B] at positions int [B], update the
    cache (donated) and sample. Returns (next tokens int32 [B], positions + 1, cache)."""
    mesh = runtime.mesh
    b = tokens.shape[0]
    if mesh is None:  # [Lf * B, S, KV, hd]: a free reshape, read unbatched at each row's index
        caches, rows, cache_axis = [c.reshape((-1,) + c.shape[2:]) for c in (cache.k, cache.v)], b, None
    else:  # rows sharded over the mesh: merging them into the layer axis would regather the cache
        caches, rows, cache_axis = [cache.k, cache.v], 1, 1
    row = functools.partial(hybrid.decode_row, rows=rows)
    logits, k_new, v_new, states = jax.vmap(row, in_axes=(None, None, cache_axis, cache_axis, 1, 0, 0, 0, 0),
                                            out_axes=(0, 0, 0, 1))(params, config, *caches, cache.gdn, tokens,
                                                                   positions, rope, jnp.arange(b) * (mesh is None))
    k, v = (write_step(c, n, positions, row_axis=1) for c, n in ((cache.k, k_new), (cache.v, v_new)))
    if suppress is not None:
        logits = logits + suppress
    tokens = constrain(choose_tokens(logits, keys, positions, temperature, top_p), mesh, "read_rows")
    cache = hybrid.constrain_cache(hybrid.HybridCache(k, v, states), mesh)
    return tokens, constrain(positions + 1, mesh, "read_rows"), cache


@dataclasses.dataclass
class HybridDecodeCache:
    """A hybrid's generation cache: layers, the model's HybridCache (full layers' K/V [Lf, B, S, KV, hd],
    Gated DeltaNet conv and recurrent states [Ll, B, ...])."""

    layers: hybrid.HybridCache

    @classmethod
    def init(cls, config, runtime, batch) -> HybridDecodeCache:
        check_hybrid_mesh(config, runtime.mesh)
        return cls(hybrid.new_cache(config, batch.rows, batch.cache_len, runtime.jnp_dtype, runtime.mesh))

    def prefill(self, params, config, runtime, batch):
        """Each prompt alone into its row, chunk by chunk (its tokens but the last, and no padding, enter
        the GDN states), then the first step."""
        mesh, chunk, cache = runtime.mesh, batch.chunk, self.layers
        for r, prompt in enumerate(batch.prompts):
            padded = np.zeros((1, -(-prompt.size // chunk) * chunk), np.int32)
            padded[0, :prompt.size] = prompt
            rope = RopeTables(*(host_array(t, mesh) for t in rope_tables(config, prompt.size)))
            for start in range(0, prompt.size - 1, chunk):
                chunk_ids, at, row = (host_array(a, mesh) for a in (padded[:, start:start + chunk], np.int32(start),
                                                                    np.int32(r)))
                cache = prefill_hybrid_row(params, cache, chunk_ids, at, row, jnp.int32(min(chunk, prompt.size - 1 - start)),
                                           rope, config=config, runtime=runtime)
        return HybridDecodeCache(cache).step(params, config, runtime, batch, host_array(batch.last_tokens, mesh),
                                             host_array(batch.lengths - 1, mesh), 0)

    def step(self, params, config, runtime, batch, tokens, positions, fed: int):
        tokens, positions, layers = decode_hybrid_step(params, self.layers, tokens, positions, *batch.sampling(fed),
                                                       config=config, runtime=runtime)
        return tokens, positions, HybridDecodeCache(layers)


jax.tree_util.register_dataclass(HybridDecodeCache, data_fields=["layers"], meta_fields=[])
