"""Teacher-forced reads of many sequences, several per jitted step.

Sequences on one length-ladder rung (and, for a length-dependent rope, one rope_key) are read
together: right-padded to the rung and stacked into a batch of BATCH_ROWS rows, the trunk runs
each chunk for all of them at once. Padding after a sequence's end sits at later positions, so
causal attention never lets it reach a read position: every row gets what a separate read()
gives, float32 noise apart (the batched matmuls may sum in another order: measured at most
6.7e-6 in log-prob on the embedded model, the same bits on the tests' tiny models). Batches take at most batch_size rows and are
padded to a power of two (a padding row reads nothing), so one rung compiles at most
log2(batch_size) + 1 trunk executables, whatever the number of read positions.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
from jaxeval.engine.read import check_read_request, host_rope, new_read_cache, read_head, run_chunk
from jaxeval.errors import InputTooLongError
from jaxeval.models.config import ModelConfig
from jaxeval.models.rope import rope_key
from jaxeval.models.sharding import host_array, zeros


def rows_per_step(batch_size: int) -> int:
    """Sequences a benchmark's reads batch per step on this platform: batch_size on an accelerator,
    one on CPU, where one row already keeps the cores busy. Measured on the default job (`jaxeval run`,
    the embedded model, 2 cores, 2026-12-02): --batch_size 8 took 60.8 s and 1.49 GB, one per step
    52.2 s and 1.10 GB, the same results to 2e-6."""
    import jax

    return batch_size if jax.default_backend() != "cpu" else 1


@dataclasses.dataclass(frozen=True)
class _Checked:
    index: int
    ids: np.ndarray  # int32 [T]
    positions: np.ndarray  # int32 [K]
    tokens: np.ndarray  # int32 [K, C]
    one_token_each: bool
    n_inputs: int  # max(positions): the inputs this read needs


def batch_rows(n: int) -> int:
    """Rows of a read batch of n sequences: the next power of two >= n."""
    rows = 1
    while rows < n:
        rows *= 2
    return rows


def checked_requests(config: ModelConfig, requests, record=_Checked) -> list:
    """Each (ids, positions, tokens) request checked (read.check_read_request) and within the model's
    context, as record(index, ids, positions, tokens, one_token_each, n_inputs)."""
    checked = []
    for index, (ids, positions, tokens) in enumerate(requests):
        one = np.ndim(tokens) == 1
        ids, positions, tokens = check_read_request(ids, positions, tokens, config.vocab_size)
        n_inputs = int(positions.max())
        if n_inputs > config.context_limit:
            raise InputTooLongError(f"read: {n_inputs} input tokens exceed the model's context "
                                    f"({config.context_source})")
        checked.append(record(index, ids, positions, tokens, one, n_inputs))
    return checked


def read_batches(config: ModelConfig, requests, batch_size: int) -> tuple[list[_Checked], list[list[_Checked]]]:
    """The checked requests and the batches they are read in: one rung (and rope key) per batch,
    longest first within a rung, at most batch_size each. Deterministic in the requests alone, so
    a resumed run reads every sequence in the same company."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"read_batch: batch_size must be a positive integer, got {batch_size!r}")
    checked = checked_requests(config, requests)
    groups: dict[tuple, list[_Checked]] = {}
    for request in checked:
        groups.setdefault((length_bucket(request.n_inputs), rope_key(config, request.ids.size)), []).append(request)
    batches = []
    for group in groups.values():
        group = sorted(group, key=lambda r: -r.n_inputs)  # stable: equal lengths keep request order
        batches += [group[first:first + batch_size] for first in range(0, len(group), batch_size)]
    return checked, batches


def read_batch(params, config: ModelConfig, requests, *, batch_size: int = 8, backend="chunked",
               prefill_chunk_len=2048, dtype=jnp.float32, mesh=None, kv_cache=None) -> list[ReadResult]:
    """read() of every (ids, positions, tokens) request, batch_size sequences per jitted step;
    results in request order (see jaxeval.engine.backend.ReadBackend.read)."""
    checked, batches = read_batches(config, requests, batch_size)
    results: list[ReadResult | None] = [None] * len(checked)
    for batch in batches:
        for request, result in zip(batch, _read_one_batch(params, config, batch, backend=backend,
                                                          prefill_chunk_len=prefill_chunk_len, dtype=dtype,
                                                          mesh=mesh, kv_cache=kv_cache)):
            results[request.index] = result
    return results


def _read_one_batch(params, config: ModelConfig, batch: list[_Checked], *, backend, prefill_chunk_len, dtype,
                    mesh, kv_cache=None) -> list[ReadResult]:
    """One batch of one rung: the trunk chunk by chunk over all rows, one head over every read row."""
    rows = batch_rows(len(batch))
    longest = max(r.n_inputs for r in batch)
    bucket = length_bucket(longest)
    chunk = chunk_size(bucket, prefill_chunk_len)
    k_pad = count_bucket(max(r.positions.size for r in batch))
    width = max(r.tokens.shape[1] for r in batch)

    padded_ids = np.zeros((rows, bucket), np.int32)
    gather_at = np.full((rows, k_pad), -1, np.int32)  # padding rows read nothing
    tokens = np.zeros((rows, k_pad, width), np.int32)
    for row, r in enumerate(batch):
        padded_ids[row, :r.n_inputs] = r.ids[:r.n_inputs]
        gather_at[row, :r.positions.size] = r.positions - 1
        tokens[row, :r.positions.size, :r.tokens.shape[1]] = r.tokens

    cache = new_read_cache(config, bucket, dtype, mesh, rows=rows, kv_cache=kv_cache)
    hidden = zeros((rows, k_pad, config.hidden_size), dtype, mesh, ("read_rows", "read_rows", "hidden"))
    gather_at = host_array(gather_at, mesh)
    rope = host_rope(config, batch[0].ids.size, mesh)  # one rope_key per batch: every row's tables
    for start in range(0, longest, chunk):
        cache, hidden = run_chunk(params, cache, host_array(padded_ids[:, start:start + chunk], mesh),
                                  host_array(np.int32(start), mesh), hidden, gather_at, rope, config=config,
                                  backend=backend, mesh=mesh, kv_cache=kv_cache)
    del cache
    top1, logprobs = read_head(params, hidden.reshape(rows * k_pad, config.hidden_size),
                               host_array(tokens.reshape(rows * k_pad, width), mesh), config=config, mesh=mesh)
    top1 = np.asarray(top1).reshape(rows, k_pad)
    logprobs = np.asarray(logprobs).reshape(rows, k_pad, width)
    out = []
    for row, r in enumerate(batch):
        k, c = r.positions.size, r.tokens.shape[1]
        values = logprobs[row, :k, :c]
        out.append(ReadResult(top1=top1[row, :k], logprobs=values[:, 0] if r.one_token_each else values))
    return out
