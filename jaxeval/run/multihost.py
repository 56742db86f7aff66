"""Multi-host runs: which samples this process computes, and gathering everyone's records.

Every host runs the same program (jax.distributed.initialize() first). With the model on each
host's own devices (the default), sample i goes to process i % n; each process journals only
its share (one journal file per process), and the records are exchanged through JAX's
coordination service so that every process scores the full set and only process 0 writes the
final files (jaxeval.engine.distributed.is_writer). When the model is sharded over a mesh spanning
hosts, every host must take part in every computation, so every process computes all samples
(--host_split auto sees this; jaxeval/suite.py).
"""

from __future__ import annotations

import json
import sys


def process_shard() -> tuple[int, int]:
    """(process index, process count); (0, 1) when JAX is not in use (benchmarks without JAX)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return 0, 1
    return jax.process_index(), jax.process_count()


_exchanges = 0  # every process makes the same sequence of exchanges, so the counter names them alike


CHUNK_BYTES = 1 << 20  # the coordination service carries small values: long payloads go in pieces


def exchange(payload: dict, timeout_s: int = 3600) -> list[dict]:
    """Every process's payload (JSON-serialisable), in process order, via the coordination service."""
    global _exchanges
    from jax._src import distributed  # the coordination-service client of jax.distributed.initialize

    index, count = process_shard()
    if count == 1:
        return [payload]
    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("multi-process run without jax.distributed.initialize(): cannot gather records")
    _exchanges += 1
    tag = f"jaxeval/records/{_exchanges}"
    data = json.dumps(payload, allow_nan=True).encode()
    pieces = [data[start:start + CHUNK_BYTES] for start in range(0, len(data), CHUNK_BYTES)] or [b""]
    for n, piece in enumerate(pieces):
        client.key_value_set_bytes(f"{tag}/{index}/{n}", piece)
    client.key_value_set(f"{tag}/{index}/pieces", str(len(pieces)))
    gathered = []
    for other in range(count):
        if other == index:
            gathered.append(payload)
            continue
        n_pieces = int(client.blocking_key_value_get(f"{tag}/{other}/pieces", timeout_s * 1000))
        raw = b"".join(client.blocking_key_value_get_bytes(f"{tag}/{other}/{n}", timeout_s * 1000)
                       for n in range(n_pieces))
        gathered.append(json.loads(raw))
    client.wait_at_barrier(f"{tag}/read", timeout_s * 1000)  # nobody exits while others still read
    return gathered
