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
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxeval.engine.decode_row import write_step
from jaxeval.engine.sampling import choose_tokens
from jaxeval.models import hybrid
from jaxeval.models.sharding import constrain


@functools.partial(jax.jit, static_argnames=("config", "backend", "mesh"), donate_argnums=(1,))
def prefill_hybrid_row(params, cache, chunk_ids, start, row, valid, rope, *, config, backend, mesh=None):
    """Run chunk_ids int [1, C] (positions start ..) into row `row` of the cache; valid int scalar: how many
    of the chunk's tokens are the prompt's (the rest is padding). rope: RopeTables of the prompt."""
    take = lambda a: jax.lax.dynamic_slice_in_dim(a, row, 1, axis=1)
    _, new = hybrid.prefill(params, config, chunk_ids, start, jax.tree.map(take, cache), backend, rope,
                            lengths=valid[None], mesh=mesh)
    put = lambda a, n: jax.lax.dynamic_update_slice_in_dim(a, n.astype(a.dtype), row, axis=1)
    return hybrid.constrain_cache(jax.tree.map(put, cache, new), mesh)


@functools.partial(jax.jit, static_argnames=("config", "mesh"), donate_argnums=(1,))
def decode_hybrid_step(params, cache, tokens, positions, keys, temperature, top_p, rope, suppress=None, *, config,
                       mesh=None):
    """jaxeval.engine.generate.decode_step for a hybrid: feed tokens int [B] at positions int [B], update the
    cache (donated) and sample. Returns (next tokens int32 [B], positions + 1, cache)."""
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
