"""Teacher-forced reads of many sequences that share token prefixes: each shared prefix runs once.

Requests that start with the same chunk-aligned token prefix share its KV cache (for a hybrid,
also the Gated DeltaNet states at the prefix's end): the prefix is run once and every request
continues from a copy of it. A prefix is shared only up to the
last whole chunk before a request's first read position, so no read falls inside it and the
continuation gathers its hidden states exactly as a separate read would. With the same cache
bucket and chunk length as a separate read, the results are bit-identical to it.

Requests are grouped by their first chunk; a group shares one cache length (the bucket of its
longest request). Within a group, a trie over chunks finds the prefixes two or more requests
pass through; each request starts from the deepest such prefix on its path.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.batch_read import checked_requests, read_batch
from jaxeval.engine.read import host_rope, new_read_cache, read_head, run_chunk
from jaxeval.models.config import ModelConfig
from jaxeval.models.rope import rope_key
from jaxeval.models.sharding import host_array, zeros


@dataclasses.dataclass(frozen=True)
class SharedReads:
    results: list  # ReadResult per request, in request order
    tokens_run: int  # input tokens actually run through the trunk
    tokens_naive: int  # input tokens of one separate read per request
    prefixes: int  # shared prefixes computed


@dataclasses.dataclass
class _Request:
    index: int
    ids: np.ndarray  # int32 [T]
    positions: np.ndarray  # int32 [K]
    tokens: np.ndarray  # int32 [K, C]
    one_token_each: bool
    n_inputs: int  # max(positions): inputs needed
    path: list = dataclasses.field(default_factory=list)  # trie node ids, one per shareable chunk
    start: int = 0  # trie depth (chunks) it continues from


def read_many(params, config: ModelConfig, requests, *, backend="chunked", prefill_chunk_len=2048,
              dtype=jnp.float32, mesh=None, batch_size: int = 1, kv_cache=None) -> SharedReads:
    """Read every (ids, positions, tokens) request; see jaxeval.engine.backend.ReadBackend.read.

    The requests that share no prefix are read batch_size per step (jaxeval.engine.batch_read;
    1: one at a time, exactly read()). mesh: the jaxeval mesh the params are sharded over (None: one device)."""
    checked, grouped = _grouped(config, requests, prefill_chunk_len)
    results: list = [None] * len(checked)
    tokens_run, prefixes = 0, 0
    run = dict(params=params, config=config, backend=backend, dtype=dtype, mesh=mesh, kv_cache=kv_cache)
    singles = [group[0] for group in grouped if len(group) == 1]
    single_reads = read_batch(params, config, [(r.ids, r.positions, r.tokens[:, 0] if r.one_token_each else r.tokens)
                                               for r in singles], batch_size=batch_size, backend=backend,
                              prefill_chunk_len=prefill_chunk_len, dtype=dtype, mesh=mesh, kv_cache=kv_cache)
    for request, result in zip(singles, single_reads):
        results[request.index] = result
        tokens_run += request.n_inputs
    for group in grouped:
        if len(group) > 1:
            group_run, group_prefixes = _read_group(group, results, prefill_chunk_len, **run)
            tokens_run += group_run
            prefixes += group_prefixes
    return SharedReads(results=results, tokens_run=tokens_run,
                       tokens_naive=sum(r.n_inputs for r in checked), prefixes=prefixes)


def _grouped(config: ModelConfig, requests, prefill_chunk_len: int) -> tuple[list[_Request], list[list[_Request]]]:
    """The checked requests and their groups (those sharing a first chunk, then the singles)."""
    checked = checked_requests(config, requests, _Request)
    overall = chunk_size(length_bucket(max((r.n_inputs for r in checked), default=1)), prefill_chunk_len)
    groups: dict[tuple, list[_Request]] = {}
    singles: list[list[_Request]] = []
    for request in checked:
        if int(request.positions.min()) - 1 >= overall:  # a whole first chunk before the first read
            # a length-dependent rope (dynamic NTK, LongRoPE) shares a prefix only between equal tables
            key = (request.ids[:overall].tobytes(), rope_key(config, request.ids.size))
            groups.setdefault(key, []).append(request)
        else:
            singles.append([request])
    return checked, [*groups.values(), *singles]


def planned_segments(config: ModelConfig, requests, prefill_chunk_len: int = 2048) -> list[tuple[int, int, int]]:
    """What read_many would run, without running it: (first input, end, read rows) per stretch of
    trunk work, each shared prefix once (sum of end - first = read_many's tokens_run)."""
    segments = []
    for group in _grouped(config, requests, prefill_chunk_len)[1]:
        if len(group) == 1:
            segments.append((0, group[0].n_inputs, int(group[0].positions.size)))
            continue
        chunk = chunk_size(length_bucket(max(r.n_inputs for r in group)), prefill_chunk_len)
        shared, _ = _share(group, chunk)
        segments += [((shared[above][0] if above != -1 else 0) * chunk, depth * chunk, 0)
                     for depth, above in shared.values()]
        segments += [(r.start * chunk, r.n_inputs, int(r.positions.size)) for r in group]
    return segments


def _share(group: list[_Request], chunk: int) -> tuple[dict[int, tuple[int, int]], dict[int, int]]:
    """The trie over chunks: each request's path and start depth set; -> shared prefixes (node ->
    (depth, the nearest shared prefix above it)) and how many continue from each."""
    # The trie: node id per (parent node id, chunk bytes), and how many requests pass through it.
    nodes: dict[tuple[int, bytes], int] = {}
    passing: list[int] = []
    for request in group:
        parent = -1
        request.path = []
        for depth in range((int(request.positions.min()) - 1) // chunk):
            key = (parent, request.ids[depth * chunk:(depth + 1) * chunk].tobytes())
            if key not in nodes:
                nodes[key] = len(passing)
                passing.append(0)
            parent = nodes[key]
            passing[parent] += 1
            request.path.append(parent)
    for request in group:
        request.start = max((depth + 1 for depth, node in enumerate(request.path) if passing[node] >= 2), default=0)
    # Shared prefixes: (node id) -> depth and the nearest shared prefix above it, and their users.
    shared: dict[int, tuple[int, int]] = {}
    users: dict[int, int] = {}
    starts = {request.path[request.start - 1] for request in group if request.start}
    for request in group:
        above = -1
        for depth, node in enumerate(request.path[:request.start]):
            if node in starts:
                if node not in shared:
                    shared[node] = (depth + 1, above)
                    if above != -1:
                        users[above] = users.get(above, 0) + 1
                above = node
        if request.start:
            users[above] = users.get(above, 0) + 1
    return shared, users


def _read_group(group: list[_Request], results: list, prefill_chunk_len: int, *, params, config, backend,
                dtype, mesh, kv_cache=None) -> tuple[int, int]:
    bucket = length_bucket(max(r.n_inputs for r in group))
    chunk = chunk_size(bucket, prefill_chunk_len)
    shared, users = _share(group, chunk)

    caches: dict[int, object] = {}  # node -> its cache (K/V, and a hybrid's GDN states, after the prefix)
    tokens_run = 0

    rope = host_rope(config, group[0].ids.size, mesh)  # one rope_key per group: every member's tables

    def padded(request: _Request) -> np.ndarray:
        ids = np.zeros((1, bucket), np.int32)
        ids[0, :request.n_inputs] = request.ids[:request.n_inputs]
        return ids

    def take(node: int):
        """A fresh copy of the node's cache (zeros at the root); frees it after its last user."""
        if node == -1:
            return new_read_cache(config, bucket, dtype, mesh, kv_cache=kv_cache)
        cache = caches[node]
        users[node] -= 1
        if users[node] == 0:
            del caches[node]
            return cache
        return jax.tree.map(jnp.copy, cache)

    def ensure(node: int, request: _Request) -> None:
        nonlocal tokens_run
        if node == -1 or node in caches:
            return
        depth, above = shared[node]
        ensure(above, request)
        start = shared[above][0] * chunk if above != -1 else 0
        cache = take(above)
        ids = padded(request)
        hidden = zeros((count_bucket(1), config.hidden_size), dtype, mesh, ("read_rows", "hidden"))
        no_reads = host_array(np.full((count_bucket(1),), -1, np.int32), mesh)
        for at in range(start, depth * chunk, chunk):
            cache, hidden = run_chunk(params, cache, host_array(ids[:, at:at + chunk], mesh),
                                      host_array(np.int32(at), mesh), hidden, no_reads, rope, config=config,
                                      backend=backend, mesh=mesh, kv_cache=kv_cache)
        caches[node] = cache
        tokens_run += depth * chunk - start

    # In trie order, so one subtree's caches are freed before the next subtree's are made.
    for request in sorted(group, key=lambda r: r.path[:r.start]):
        node = request.path[request.start - 1] if request.start else -1
        ensure(node, request)
        cache = take(node)
        k = request.positions.size
        k_pad = count_bucket(k)
        gather_at = np.full((k_pad,), -1, np.int32)
        gather_at[:k] = request.positions - 1
        tokens = np.zeros((k_pad, request.tokens.shape[1]), np.int32)
        tokens[:k] = request.tokens
        hidden = zeros((k_pad, config.hidden_size), dtype, mesh, ("read_rows", "hidden"))
        ids, gather_at = padded(request), host_array(gather_at, mesh)
        for at in range(request.start * chunk, request.n_inputs, chunk):
            cache, hidden = run_chunk(params, cache, host_array(ids[:, at:at + chunk], mesh),
                                      host_array(np.int32(at), mesh), hidden, gather_at, rope, config=config,
                                      backend=backend, mesh=mesh, kv_cache=kv_cache)
        del cache
        top1, logprobs = read_head(params, hidden, host_array(tokens, mesh), config=config, mesh=mesh)
        top1, logprobs = np.asarray(top1)[:k], np.asarray(logprobs)[:k]
        results[request.index] = ReadResult(top1=top1, logprobs=logprobs[:, 0] if request.one_token_each else logprobs)
        tokens_run += request.n_inputs - request.start * chunk
    return tokens_run, len(shared)
