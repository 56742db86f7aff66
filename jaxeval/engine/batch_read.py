"""Teacher-forced reads of many sequences, several per jitted step.

Sequences on one length-ladder rung (and, for a length-dependent rope, one rope_key) are read
together: right-padded to the rung and stacked into a batch of up to batch_size rows, the trunk
runs each chunk for all of them at once (jaxeval.engine.read.read_rows). Every row gets what a
separate read() gives, float32 noise apart (the batched matmuls may sum in another order:
measured at most 6.7e-6 in log-prob on the embedded model, the same bits on the tests' tiny
models). Batches are padded to a power of two rows (a padding row reads nothing), so one rung
compiles at most log2(batch_size) + 1 trunk executables, whatever the number of read positions.
"""

from __future__ import annotations

from jaxeval.engine.backend import ReadResult
from jaxeval.engine.buckets import length_bucket
from jaxeval.engine.read import ReadRequest, check_requests, read_rows
from jaxeval.engine.runtime import Runtime
from jaxeval.models.config import ModelConfig
from jaxeval.models.rope import rope_key


def rows_per_step(batch_size: int) -> int:
    """Sequences a benchmark's reads batch per step on this platform: batch_size on an accelerator,
    one on CPU, where one row already keeps the cores busy. Measured on the default job (`jaxeval run`,
    the embedded model, 2 cores, 2026-12-02): --batch_size 8 took 60.8 s and 1.49 GB, one per step
    52.2 s and 1.10 GB, the same results to 2e-6."""
    import jax

    return batch_size if jax.default_backend() != "cpu" else 1


def check_batch_size(batch_size) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"read: batch_size must be a positive integer, got {batch_size!r}")
    return batch_size


def batches_of(config: ModelConfig, checked: list[ReadRequest], batch_size: int) -> list[list[ReadRequest]]:
    """The batches checked requests are read in: one rung (and rope key) per batch, longest first
    within a rung, at most batch_size each. Deterministic in the requests alone, so a resumed run
    reads every sequence in the same company."""
    groups: dict[tuple, list[ReadRequest]] = {}
    for request in checked:
        groups.setdefault((length_bucket(request.n_inputs), rope_key(config, request.ids.size)), []).append(request)
    batches = []
    for group in groups.values():
        group = sorted(group, key=lambda r: -r.n_inputs)  # stable: equal lengths keep request order
        batches += [group[first:first + batch_size] for first in range(0, len(group), batch_size)]
    return batches


def read_batches(config: ModelConfig, requests, batch_size: int) -> tuple[list[ReadRequest], list[list[ReadRequest]]]:
    """The checked (ids, positions, tokens) requests and the batches they are read in (batches_of)."""
    check_batch_size(batch_size)
    checked = check_requests(config, requests)
    return checked, batches_of(config, checked, batch_size)


def read_checked(params, config: ModelConfig, runtime: Runtime, checked: list[ReadRequest],
                 batch_size: int) -> dict[int, ReadResult]:
    """Request index -> ReadResult of every checked request, batch_size sequences per jitted step."""
    results = {}
    for batch in batches_of(config, checked, batch_size):
        for request, result in zip(batch, read_rows(params, config, runtime, batch)):
            results[request.index] = result
    return results

