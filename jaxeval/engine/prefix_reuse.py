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

read_many is the engine's one entry for lists of requests (jaxeval.engine.backend.LanguageModel.
read_many): prefix sharing and rows per step are its options, every read runs the one read loop
(jaxeval.engine.read.prefill_rows).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import SharedReads
from jaxeval.engine.batch_read import check_batch_size, read_checked
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.read import ReadRequest, check_requests, host_rope, prefill_rows, read_rows
from jaxeval.engine.runtime import Runtime
from jaxeval.models.config import ModelConfig
from jaxeval.models.rope import rope_key


def read_many(params, config: ModelConfig, runtime: Runtime, requests, *, batch_size: int = 1,
              share_prefixes: bool = True) -> SharedReads:
    """Read every (ids, positions, tokens) request; see jaxeval.engine.backend.LanguageModel.read_many.

    share_prefixes: requests sharing a chunk-aligned prefix run it once (bit-identical to separate
    reads); the others are read batch_size per step (jaxeval.engine.batch_read; 1: one at a time,
    exactly read())."""
    check_batch_size(batch_size)
    checked, grouped = _grouped(config, requests, runtime.prefill_chunk, share_prefixes)
    singles = [group[0] for group in grouped if len(group) == 1]
    results = read_checked(params, config, runtime, singles, batch_size)
    tokens_run, prefixes = sum(r.n_inputs for r in singles), 0
    for group in grouped:
        if len(group) > 1:
            group_run, group_prefixes = _read_group(params, config, runtime, group, results)
            tokens_run += group_run
            prefixes += group_prefixes
    return SharedReads(results=[results[r.index] for r in checked], tokens_run=tokens_run,
                       tokens_naive=sum(r.n_inputs for r in checked), prefixes=prefixes)


def _grouped(config: ModelConfig, requests, prefill_chunk: int,
             share_prefixes: bool = True) -> tuple[list[ReadRequest], list[list[ReadRequest]]]:
    """The checked requests and their groups (those sharing a first chunk, then the singles; all
    singles without share_prefixes)."""
    checked = check_requests(config, requests)
    if not share_prefixes:
        return checked, [[r] for r in checked]
    overall = chunk_size(length_bucket(max((r.n_inputs for r in checked), default=1)), prefill_chunk)
    groups: dict[tuple, list[ReadRequest]] = {}
    singles: list[list[ReadRequest]] = []
    for request in checked:
        if int(request.positions.min()) - 1 >= overall:  # a whole first chunk before the first read
            # a length-dependent rope (dynamic NTK, LongRoPE) shares a prefix only between equal tables
            key = (request.ids[:overall].tobytes(), rope_key(config, request.ids.size))
            groups.setdefault(key, []).append(request)
        else:
            singles.append([request])
    return checked, [*groups.values(), *singles]


def planned_segments(config: ModelConfig, requests, prefill_chunk: int = 2048,
                     share_prefixes: bool = True) -> list[tuple[int, int, int]]:
    """What read_many would run, without running it: (first input, end, read rows) per stretch of
    trunk work, each shared prefix once (sum of end - first = read_many's tokens_run)."""
    segments = []
    for group in _grouped(config, requests, prefill_chunk, share_prefixes)[1]:
        if len(group) == 1:
            segments.append((0, group[0].n_inputs, int(group[0].positions.size)))
            continue
        chunk = chunk_size(length_bucket(max(r.n_inputs for r in group)), prefill_chunk)
        trie = _Trie(group, chunk)
        segments += [((trie.shared[above][0] if above != -1 else 0) * chunk, depth * chunk, 0)
                     for depth, above in trie.shared.values()]
        segments += [(trie.start[r.index] * chunk, r.n_inputs, int(r.positions.size)) for r in group]
    return segments


class _Trie:
    """The trie over a group's chunks: per request (by index) its path (trie node ids, one per
    shareable chunk) and start (the depth, in chunks, it continues from); shared: node -> (depth,
    the nearest shared prefix above it, -1: none); users: how many continue from each shared node."""

    def __init__(self, group: list[ReadRequest], chunk: int):
        # The trie: node id per (parent node id, chunk bytes), and how many requests pass through it.
        nodes: dict[tuple[int, bytes], int] = {}
        passing: list[int] = []
        self.path: dict[int, list[int]] = {}
        for request in group:
            parent = -1
            path = self.path[request.index] = []
            for depth in range((int(request.positions.min()) - 1) // chunk):
                key = (parent, request.ids[depth * chunk:(depth + 1) * chunk].tobytes())
                if key not in nodes:
                    nodes[key] = len(passing)
                    passing.append(0)
                parent = nodes[key]
                passing[parent] += 1
                path.append(parent)
        self.start = {index: max((depth + 1 for depth, node in enumerate(path) if passing[node] >= 2), default=0)
                      for index, path in self.path.items()}
        self.shared: dict[int, tuple[int, int]] = {}
        self.users: dict[int, int] = {}
        starts = {self.node(index) for index, start in self.start.items() if start}
        for request in group:
            above = -1
            for depth, node in enumerate(self.path[request.index][:self.start[request.index]]):
                if node in starts:
                    if node not in self.shared:
                        self.shared[node] = (depth + 1, above)
                        if above != -1:
                            self.users[above] = self.users.get(above, 0) + 1
                    above = node
            if self.start[request.index]:
                self.users[above] = self.users.get(above, 0) + 1

    def node(self, index: int) -> int:
        """The shared prefix a request continues from (-1: none)."""
        start = self.start[index]
        return self.path[index][start - 1] if start else -1

    def order(self, group: list[ReadRequest]) -> list[ReadRequest]:
        """Trie order, so one subtree's caches are freed before the next subtree's are made."""
        return sorted(group, key=lambda r: self.path[r.index][:self.start[r.index]])


def _read_group(params, config: ModelConfig, runtime: Runtime, group: list[ReadRequest],
                results: dict) -> tuple[int, int]:
    """Read a group sharing a first chunk into results (index -> ReadResult) -> (tokens run, prefixes)."""
    bucket = length_bucket(max(r.n_inputs for r in group))
    chunk = chunk_size(bucket, runtime.prefill_chunk)
    trie = _Trie(group, chunk)
    caches: dict[int, object] = {}  # node -> its cache (K/V, and a hybrid's GDN states, after the prefix)
    tokens_run = 0
    rope = host_rope(config, group[0].ids.size, runtime.mesh)  # one rope_key per group: every member's tables

    def take(node: int):
        """A fresh copy of the node's cache (None at the root: a new one); frees it after its last user."""
        if node == -1:
            return None
        cache = caches[node]
        trie.users[node] -= 1
        if trie.users[node] == 0:
            del caches[node]
            return cache
        return jax.tree.map(jnp.copy, cache)

    def ensure(node: int, request: ReadRequest) -> None:
        nonlocal tokens_run
        if node == -1 or node in caches:
            return
        depth, above = trie.shared[node]
        ensure(above, request)
        start = trie.shared[above][0] * chunk if above != -1 else 0
        ids = np.zeros((1, bucket), np.int32)
        ids[0, :request.n_inputs] = request.ids[:request.n_inputs]
        no_reads = np.full((1, count_bucket(1)), -1, np.int32)
        caches[node], _ = prefill_rows(params, config, runtime, ids, no_reads, rope, end=depth * chunk,
                                       cache=take(above), begin=start)
        tokens_run += depth * chunk - start

    for request in trie.order(group):
        node = trie.node(request.index)
        ensure(node, request)
        begin = trie.start[request.index] * chunk
        (results[request.index],) = read_rows(params, config, runtime, [request], bucket=bucket, cache=take(node),
                                              begin=begin)
        tokens_run += request.n_inputs - begin
    return tokens_run, len(trie.shared)
