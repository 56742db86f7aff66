"""Every jitted program a run executes, as (the engine's own jitted function, abstract arguments).

The functions are the engine's (jaxeval.engine.read, generate, hybrid_generate), called with
jax.ShapeDtypeStruct arguments in the shardings the run gives its arrays (the rules table,
jaxeval.models.sharding), so what compiles is what a run dispatches, and no weights are read.
A read of one length bucket runs: the prefill chunk (once per chunk, start traced), the gather of
the read rows after each chunk, and the LM head over the gathered rows. A generation runs its
prompt's prefill (row by row on a mesh) and the decode step at its cache bucket.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import SingleDeviceSharding

from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.runtime import Runtime
from jaxeval.weights.orbax import _abstract
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.models.kv_policy import new_kv_cache
from jaxeval.models.param_layout import param_axes, param_shapes
from jaxeval.models.sharding import DECODE_CACHE, READ_CACHE, param_shardings, sharding




@dataclasses.dataclass
class Program:
    name: str
    fn: object  # the engine's jitted function
    args: tuple  # abstract positional arguments
    static: dict  # its static keyword arguments
    flops_needed: float  # jaxeval's count of the necessary FLOPs of one call, all chips (jaxeval.bench.shapes)
    flops_xla: float  # the part the traced program holds as matmuls outside loops of a traced trip count (not
    # splash: a Mosaic kernel; not decode attention: its key-block loop runs to the position)
    splash: dict | None = None  # splash blocks executed over the whole read vs the causal minimum
    holds: dict = dataclasses.field(default_factory=dict)  # per chip: weights and KV cache bytes it holds
    calls: int = 1  # times one sequence (batch) calls it
    resident: int = 0  # per chip: bytes of the run's arrays alive during the call that are not its arguments
    dynamic_trips: float = 1.0  # the mean trip count of its loops of traced bound (time estimate)
    grouped_flops: float = 0.0  # an MoE's routed experts, all chips: on TPU a Mosaic grouped matmul (time estimate)


class Abstract:
    """ShapeDtypeStructs placed as the run places its arrays: by logical names on a mesh, or all on
    the one device of a single-chip run (mesh None)."""

    def __init__(self, mesh, device):
        self.mesh, self.device = mesh, device

    def place(self, shape, dtype, names=None):
        shape = tuple(shape)
        if self.mesh is None:
            target = SingleDeviceSharding(self.device)
        elif names is None:
            target = jax.sharding.NamedSharding(self.mesh, jax.sharding.PartitionSpec())
        else:
            target = sharding(shape, names, self.mesh)
        return jax.ShapeDtypeStruct(shape, dtype, sharding=target)

    def like(self, tree, names=None):
        return jax.tree.map(lambda a: self.place(np.shape(a), a.dtype, names), tree)

    def params(self, config, dtype):
        shapes = param_shapes(config)
        if self.mesh is None:
            return _abstract(shapes, dtype, SingleDeviceSharding(self.device))
        return _abstract(shapes, dtype, param_shardings(shapes, self.mesh, param_axes(config)))


def shard_bytes(tree) -> int:
    """Bytes one chip holds of a tree of placed ShapeDtypeStructs."""
    total = 0
    for a in jax.tree.leaves(tree):
        shape = a.sharding.shard_shape(a.shape) if a.sharding is not None else a.shape
        itemsize = 8 if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key) else jnp.dtype(a.dtype).itemsize
        total += int(np.prod(shape)) * itemsize  # a typed PRNG key: two uint32 words
    return total


def _cache(config, place, rows, length, dtype, names, hybrid_rows_first, kv_cache=None):
    if is_hybrid(config):
        from jaxeval.models import hybrid

        return hybrid.new_cache(config, rows, length, dtype, make=lambda a, axes: place(a.shape, a.dtype, axes))
    from jaxeval.engine.kv_cache import cache_shape

    def shape(width):  # the decode cache's layout (kv_cache.cache_shape), or the read's [L, B, S, KV, hd]
        return cache_shape(config, rows, length, width) if hybrid_rows_first else (
            config.num_layers, rows, length, config.num_kv_heads, width)

    return tuple(new_kv_cache(kv_cache, shape(width), dtype, lambda s, d: place(s, d, names))
                 for width in (config.head_dim, config.value_dim))


def _rope(config, a: Abstract, seq_len):
    from jaxeval.models.rope import RopeTables, rope_tables

    return RopeTables(*(a.place(t.shape, t.dtype) for t in rope_tables(config, seq_len)))


def read_programs(config, a: Abstract, dtype, *, tokens: int, rows: int, read_positions: int, prefill_chunk: int,
                  backend: str, kv_cache=None) -> list[Program]:
    """The programs of reading `rows` sequences of `tokens` inputs together (jaxeval.engine.read.
    read_rows; read() is one row), with read_positions LM-head rows each; kv_cache: the run's KV-cache policy."""
    from jaxeval.plan.flops import read_flops
    from jaxeval.engine.read import gather_rows, prefill_chunk as prefill, prefill_hybrid_chunk, read_head

    bucket = length_bucket(tokens)
    chunk = chunk_size(bucket, prefill_chunk)
    k_pad = count_bucket(read_positions)
    chunks = -(-tokens // chunk)
    params = a.params(config, dtype)
    cache = _cache(config, a.place, rows, bucket, dtype, READ_CACHE, False, kv_cache)
    rope = _rope(config, a, tokens + 1)
    ids = a.place((rows, chunk), jnp.int32)
    start = a.place((), jnp.int32)
    runtime = Runtime(attention=backend, prefill_chunk=prefill_chunk, dtype=jnp.dtype(dtype).name, mesh=a.mesh,
                      kv_cache=kv_cache)
    static = dict(config=config, runtime=runtime)
    holds = {"weights": shard_bytes(params), "kv_cache": shard_bytes(cache)}
    whole = read_flops(config, chunks * chunk, 0)
    trunk, attention = rows * whole["trunk"] / chunks, rows * whole["attention"] / chunks  # one chunk, on average
    mosaic = backend == "splash"
    # the attention XLA runs as plain matmuls: only the xla backend's (splash and cudnn are custom calls,
    # chunked attention's key-block loop has a traced bound, counted once)
    xla_attention = backend == "xla"
    tag = f"rows={rows},chunk={chunk},bucket={bucket}"
    if is_hybrid(config):
        first = Program(f"prefill_hybrid_chunk[{tag}]", prefill_hybrid_chunk, (params, cache, ids, start, rope),
                        static, trunk + attention, trunk + attention if xla_attention else trunk, holds=holds,
                        calls=chunks)
    else:
        first = Program(f"prefill_chunk[{tag}]", prefill, (params, *cache, ids, start, rope), static,
                        trunk + attention, trunk + attention if xla_attention else trunk, holds=holds,
                        calls=chunks)
    first.dynamic_trips = max(1.0, (chunks - 1) / 2)  # the history blocks before the chunk, on average
    first.grouped_flops = routed_flops(config, rows * chunk)
    if mosaic:
        first.splash = splash_blocks(config, chunk, chunks, a.mesh) | {"head_dim": config.head_dim,
                                                                         "heads_rows": config.num_heads * rows
                                                                         * _attention_layers(config)}
    hidden = a.place((rows, k_pad, config.hidden_size), dtype, ("read_rows", "read_rows", "hidden"))
    gather_at = a.place((rows, k_pad), jnp.int32)
    x = a.place((rows, chunk, config.hidden_size), dtype, ("batch", "sequence", "hidden"))
    gather = Program(f"gather_rows[{tag},read_rows={k_pad}]", gather_rows, (x, start, hidden, gather_at),
                     dict(runtime=runtime), 0.0, 0.0, holds=holds, calls=chunks,
                     resident=holds["weights"] + holds["kv_cache"])  # between chunks: weights and cache stay
    head_rows = rows * k_pad
    head_flops = 2.0 * head_rows * config.hidden_size * config.vocab_size
    head = Program(f"read_head[rows={head_rows}]", read_head,
                   (params, a.place((head_rows, config.hidden_size), dtype, ("read_rows", "hidden")),
                    a.place((head_rows, 1), jnp.int32)), static, head_flops, head_flops,
                   holds={"weights": holds["weights"], "kv_cache": 0})
    return [first, gather, head]


def decode_programs(config, a: Abstract, dtype, *, prompt: int, new_tokens: int, rows: int, prefill_chunk: int,
                    backend: str, kv_cache=None) -> list[Program]:
    """The programs of generating new_tokens after `rows` prompts of `prompt` tokens: the prompt's
    prefill (every row's chunk at once on one chip, one row at a time into the batch cache on a mesh,
    as jaxeval.engine.kv_cache.write_prompts) and the decode step at the cache bucket."""
    from jaxeval.plan.flops import read_flops
    from jaxeval.engine.decode_row import DECODE_BLOCK, decode_block
    from jaxeval.engine.hybrid_generate import decode_hybrid_step, prefill_hybrid_row
    from jaxeval.engine.kv_cache import KVCache, QuantizedKVCache, decode_step, prefill_rows
    from jaxeval.engine.runtime import Runtime
    from jaxeval.engine.sampling import prompt_keys
    from jaxeval.models.rope import RopeTables, row_tables

    cache_len = length_bucket(prompt + new_tokens - 1)
    chunk = chunk_size(length_bucket(prompt), prefill_chunk)
    while cache_len % chunk:
        chunk //= 2
    params = a.params(config, dtype)
    hybrid_model = is_hybrid(config)
    cache = _cache(config, a.place, rows, cache_len, dtype, DECODE_CACHE, True, kv_cache)
    runtime = Runtime(attention=backend, prefill_chunk=prefill_chunk, dtype=jnp.dtype(dtype).name, mesh=a.mesh,
                      kv_cache=kv_cache)
    if not hybrid_model:  # the cache kind generate decodes from (streaming / snapkv: their masked form)
        cache = (QuantizedKVCache if kv_cache is not None and kv_cache.quantized else KVCache)(*cache)
    holds = {"weights": shard_bytes(params), "kv_cache": shard_bytes(cache)}
    start, row = a.place((), jnp.int32), a.place((), jnp.int32)
    rope = _rope(config, a, prompt)
    tag = f"rows={rows},cache={cache_len}"
    chunks = -(-(prompt - 1) // chunk)
    whole = read_flops(config, chunks * chunk, 0)
    per_chunk = (whole["trunk"] + whole["attention"]) / chunks
    if hybrid_model:
        fill = Program(f"prefill_hybrid_row[chunk={chunk},{tag}]", prefill_hybrid_row,
                       (params, cache, a.place((1, chunk), jnp.int32), start, row, a.place((), jnp.int32), rope),
                       dict(config=config, runtime=runtime), per_chunk, per_chunk, holds=holds,
                       calls=chunks * rows)
    elif (a.mesh is None or a.mesh.shape["context"] == 1) and rows > 1:
        fill = Program(f"prefill_rows[chunk={chunk},{tag}]", prefill_rows,
                       (params, cache, a.place((rows, chunk), jnp.int32), start, row, rope),
                       dict(config=config, runtime=runtime), rows * per_chunk, rows * per_chunk, holds=holds,
                       calls=chunks)
    else:
        fill = Program(f"prefill_row[chunk={chunk},{tag}]", prefill_rows,
                       (params, cache, a.place((1, chunk), jnp.int32), start, row, rope),
                       dict(config=config, runtime=runtime), per_chunk, per_chunk, holds=holds,
                       calls=chunks * rows)
    fill_rows = rows if fill.name.startswith("prefill_rows") else 1
    fill.grouped_flops = routed_flops(config, fill_rows * chunk)
    if backend != "xla":  # as read_programs: attention outside XLA's matmuls, or in a loop of traced bound
        fill.flops_xla = fill.flops_needed - fill_rows * whole["attention"] / chunks
    if backend == "splash":
        fill.splash = splash_blocks(config, chunk, chunks, a.mesh) | {
            "head_dim": config.head_dim, "heads_rows": config.num_heads * fill_rows * _attention_layers(config)}
    keys = jax.eval_shape(prompt_keys, jax.ShapeDtypeStruct((), jnp.uint32), jax.ShapeDtypeStruct((rows,), jnp.int32))
    tables = row_tables(config, np.full(rows, prompt))
    step_rope = RopeTables(*(a.place(t.shape, t.dtype) for t in tables))
    vec = a.place((rows,), jnp.int32)
    scalar = a.place((), jnp.float32)
    trunk_head = rows * (read_flops(config, 1, 1)["total"] - read_flops(config, 1, 0)["attention"])
    attention = rows * 4.0 * config.num_heads * config.head_dim * prompt * _attention_layers(config)
    keys = a.place(keys.shape, keys.dtype)
    if hybrid_model:
        step = Program(f"decode_hybrid_step[{tag}]", decode_hybrid_step,
                       (params, cache, vec, vec, keys, scalar, scalar, step_rope), dict(config=config, runtime=runtime),
                       trunk_head + attention, trunk_head, holds=holds, calls=new_tokens,
                       dynamic_trips=-(-prompt // DECODE_BLOCK))  # hybrid.decode_row: 512-key trips
    else:
        step = Program(f"decode_step[{tag}]", decode_step,
                       (params, cache, vec, vec, keys, scalar, scalar, step_rope), dict(config=config, runtime=runtime),
                       trunk_head + attention, trunk_head, holds=holds, calls=new_tokens,
                       dynamic_trips=-(-prompt // decode_block(cache_len)))  # the key-block trips to the prompt
    step.grouped_flops = routed_flops(config, rows)
    return [fill, step]


def routed_flops(config, tokens: int) -> float:
    """FLOPs of an MoE's routed experts over `tokens` tokens (the top-k pairs, every MoE layer): on TPU
    XLA runs them as Mosaic grouped matmuls, which the cost model's cycle estimates do not cover."""
    if config.moe is None:
        return 0.0
    from jaxeval.models.moe import moe_flops

    per_layer = moe_flops(tokens, config.moe, config.hidden_size, config.moe_intermediate_size)["routed"]
    return float(per_layer * (config.num_layers - config.dense_layers))


def _attention_layers(config) -> int:
    from jaxeval.models.families import LINEAR

    return sum(t != LINEAR for t in config.layer_types)


def splash_blocks(config, chunk: int, chunks: int, mesh) -> dict:
    """Splash blocks a read of `chunks` chunks executes (from the kernels' own mask info: the causal
    diagonal call per chunk, and one full history call per earlier chunk, jaxeval.models.attention_parts
    ._blocked_history), against the causal minimum over the whole read at the same block size."""
    from jaxeval.models.splash_attention import kernel_blocks

    cp = 1 if mesh is None else int(mesh.shape["context"])
    t = chunk // cp if cp > 1 else chunk
    diagonal = kernel_blocks("diagonal", t, chunk // cp if cp > 1 else t)
    history = kernel_blocks("history", t, chunk) if chunks > 1 else {"blocks": 0, "block_q": 0, "block_kv": 0}
    executed = chunks * diagonal["blocks"] * cp + chunks * (chunks - 1) // 2 * history["blocks"] * cp
    bq, bkv = diagonal["block_q"], diagonal["block_kv"]
    n_q, n_kv = chunks * chunk // bq, chunks * chunk // bkv
    minimum = sum(min(n_kv, -(-((i + 1) * bq) // bkv)) for i in range(n_q))  # blocks touching the causal triangle
    return {"executed_blocks": executed, "causal_minimum_blocks": minimum, "ratio": executed / minimum,
            "block_q": bq, "block_kv": bkv, "per_head_per_row": True}
