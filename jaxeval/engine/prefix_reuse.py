"""Teacher-forced reads of many sequences that share token prefixes: each shared prefix runs once.

Requests that start with the same token prefix share its KV cache (for a hybrid, also the Gated
DeltaNet states at the prefix's end): the prefix is run once and every request continues from a
copy of it. A prefix is shared only up to the last whole grain (share_grain: 512 tokens, or the
prefill chunk where that is shorter; a hybrid's whole chunks) before a request's first read
position, so no read falls inside it and the continuation gathers its hidden states exactly as a
separate read would.

A continuation from token s runs in chunks of the largest power of two <= the prefill chunk
that divides s and the grain past its last input (run_chunk; a prefix, prefix_pieces), so its
chunks lie on the grid of a separate read's 256-query attention blocks, each query block seeing
the same keys in the same blocks: the results are bit-identical to separate reads (tested on CPU:
tests/engine/test_prefix_reuse_grain.py; docs/performance_2026-12.md section 7). 256 is not a
grain: a 256-token chunk holds one query block, and its reads differed from a 2,048-token chunk's
by up to 6e-6 in log-prob on CPU.

Requests are grouped by their first grain; a group shares one cache length (the bucket of its
longest request). Within a group, a trie over grains finds the prefixes two or more requests pass
through and where those part (a prefix common to several such prefixes runs once too); each
request starts from the deepest shared prefix on its path.

read_many is the engine's one entry for lists of requests (jaxeval.engine.backend.LanguageModel.
read_many): prefix sharing and rows per step are its options, every read runs the one read loop
(jaxeval.engine.read.prefill_rows).
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import SharedReads
from jaxeval.engine.batch_read import check_batch_size, read_checked
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.read import ReadRequest, check_requests, host_rope, prefill_rows, read_rows
from jaxeval.engine.runtime import Runtime
from jaxeval.models.attention import CHUNKED_BLOCK
from jaxeval.models.config import ModelConfig
from jaxeval.models.hybrid_layout import is_hybrid
from jaxeval.models.rope import rope_key

SHARE_GRAIN = 2 * CHUNKED_BLOCK  # tokens: a shared prefix ends on a multiple of this (the module docstring says why)


def share_grain(config: ModelConfig, chunk: int) -> int:
    """Where a shared prefix may end, for a group whose prefill chunk is chunk: every SHARE_GRAIN
    tokens (every chunk where that is shorter); a hybrid's at its chunks, where a separate read's
    Gated DeltaNet states are."""
    return chunk if is_hybrid(config) else min(chunk, SHARE_GRAIN)


def run_chunk(begin: int, end: int, chunk: int) -> int:
    """The prefill chunk of a continuation over [begin, end) (multiples of the grain; end the grain
    past its last input): the largest power of two <= chunk dividing both, so its chunks start on a
    separate read's attention query blocks and it runs nothing past the grain holding its last input
    (a 2,048-token last chunk would run up to 1,536 positions more at the sequence's far end, where
    each attends to the most keys)."""
    return chunk_size(math.gcd(begin, end), chunk)


def prefix_pieces(begin: int, end: int, chunk: int) -> list[tuple[int, int, int]]:
    """A shared prefix's stretch [begin, end) (multiples of a power-of-two grain) as (first, end,
    chunk) runs: at each point the longest power of two <= chunk it is a multiple of that still
    ends by end, so nothing past the prefix is run and the chunks lie on a separate read's grid."""
    runs: list[tuple[int, int, int]] = []
    at = begin
    while at < end:
        size = chunk
        while at % size or at + size > end:
            size //= 2
        if runs and runs[-1][2] == size:
            runs[-1] = (runs[-1][0], at + size, size)
        else:
            runs.append((at, at + size, size))
        at += size
    return runs


def read_many(params, config: ModelConfig, runtime: Runtime, requests, *, batch_size: int = 1,
              share_prefixes: bool = True) -> SharedReads:
    """Read every (ids, positions, tokens) request; see jaxeval.engine.backend.LanguageModel.read_many.

    share_prefixes: requests sharing a prefix of whole grains run it once (bit-identical to separate
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
    """The checked requests and their groups (those sharing a first grain, then the singles; all
    singles without share_prefixes)."""
    checked = check_requests(config, requests)
    if not share_prefixes:
        return checked, [[r] for r in checked]
    overall = chunk_size(length_bucket(max((r.n_inputs for r in checked), default=1)), prefill_chunk)
    grain = share_grain(config, overall)
    groups: dict[tuple, list[ReadRequest]] = {}
    singles: list[list[ReadRequest]] = []
    for request in checked:
        if int(request.positions.min()) - 1 >= grain:  # a whole first grain before the first read
            # a length-dependent rope (dynamic NTK, LongRoPE) shares a prefix only between equal tables
            key = (request.ids[:grain].tobytes(), rope_key(config, request.ids.size))
            groups.setdefault(key, []).append(request)
        else:
            singles.append([request])
    return checked, [*groups.values(), *singles]


def _group_shape(config: ModelConfig, group: list[ReadRequest], prefill_chunk: int) -> tuple[int, int, int]:
    """(cache bucket, prefill chunk, share grain) of a group."""
    bucket = length_bucket(max(r.n_inputs for r in group))
    chunk = chunk_size(bucket, prefill_chunk)
    return bucket, chunk, share_grain(config, chunk)


def planned_segments(config: ModelConfig, requests, prefill_chunk: int = 2048,
                     share_prefixes: bool = True) -> list[tuple[int, int, int]]:
    """What read_many would run, without running it: (first input, end, read rows) per stretch of
    trunk work, each shared prefix once (sum of end - first = read_many's tokens_run)."""
    segments = []
    for group in _grouped(config, requests, prefill_chunk, share_prefixes)[1]:
        if len(group) == 1:
            segments.append((0, group[0].n_inputs, int(group[0].positions.size)))
            continue
        grain = _group_shape(config, group, prefill_chunk)[2]
        trie = _Trie(group, grain)
        segments += [((trie.shared[above][0] if above != -1 else 0) * grain, depth * grain, 0)
                     for depth, above in trie.shared.values()]
        segments += [(trie.start[r.index] * grain, r.n_inputs, int(r.positions.size)) for r in group]
    return segments


class _Trie:
    """The trie over a group's grains: per request (by index) its path (trie node ids, one per
    shareable grain) and start (the depth, in grains, it continues from); shared: node -> (depth,
    the nearest shared prefix above it, -1: none); users: how many continue from each shared node.

    A node is a shared prefix where a request starts (the deepest node on its path that another
    request passes too) or where the paths to two such starts part: a prefix common to several
    shared prefixes (a preamble every text opens with) runs once, not once per prefix below it."""

    def __init__(self, group: list[ReadRequest], grain: int):
        # The trie: node id per (parent node id, grain bytes), and how many requests pass through it.
        nodes: dict[tuple[int, bytes], int] = {}
        passing: list[int] = []
        self.path: dict[int, list[int]] = {}
        for request in group:
            parent = -1
            path = self.path[request.index] = []
            for depth in range((int(request.positions.min()) - 1) // grain):
                key = (parent, request.ids[depth * grain:(depth + 1) * grain].tobytes())
                if key not in nodes:
                    nodes[key] = len(passing)
                    passing.append(0)
                parent = nodes[key]
                passing[parent] += 1
                path.append(parent)
        self.start = {index: max((depth + 1 for depth, node in enumerate(path) if passing[node] >= 2), default=0)
                      for index, path in self.path.items()}
        # kept: the starts, and the nodes whose paths to starts go on through two or more children
        children: dict[int, set[int]] = {}
        kept = {self.node(index) for index, start in self.start.items() if start}
        for index, start in self.start.items():
            for node, below in zip(self.path[index][:start], self.path[index][1:start]):
                children.setdefault(node, set()).add(below)
        kept |= {node for node, below in children.items() if len(below) >= 2}
        self.shared: dict[int, tuple[int, int]] = {}
        self.users: dict[int, int] = {}
        for request in group:
            above = -1
            for depth, node in enumerate(self.path[request.index][:self.start[request.index]]):
                if node in kept:
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
    """Read a group sharing a first grain into results (index -> ReadResult) -> (tokens run, prefixes)."""
    bucket, chunk, grain = _group_shape(config, group, runtime.prefill_chunk)
    trie = _Trie(group, grain)
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
        start = trie.shared[above][0] * grain if above != -1 else 0
        ids = np.zeros((1, bucket), np.int32)
        ids[0, :request.n_inputs] = request.ids[:request.n_inputs]
        no_reads = np.full((1, count_bucket(1)), -1, np.int32)
        cache = take(above)
        for first, end, size in prefix_pieces(start, depth * grain, chunk):
            cache, _ = prefill_rows(params, config, dataclasses.replace(runtime, prefill_chunk=size), ids, no_reads,
                                    rope, end=end, cache=cache, begin=first)
        caches[node] = cache
        tokens_run += depth * grain - start

    for request in trie.order(group):
        node = trie.node(request.index)
        ensure(node, request)
        begin = trie.start[request.index] * grain
        size = run_chunk(begin, -(-request.n_inputs // grain) * grain, chunk)
        continued = dataclasses.replace(runtime, prefill_chunk=size)
        (results[request.index],) = read_rows(params, config, continued, [request], bucket=bucket, cache=take(node),
                                              begin=begin)
        tokens_run += request.n_inputs - begin
    return tokens_run, len(trie.shared)
