"""map_journaled: compute the records of a list of sample keys, resuming from the journal and
sharing the work between hosts; the framework's sample loop (jaxeval/benchmarks/loop.py) journals
every benchmark's samples through it."""

from __future__ import annotations

from typing import Callable, Sequence

from jaxeval.errors import DataError
from jaxeval.interrupt import checkpoint
from jaxeval.progress import progress
from jaxeval.run.journal import journaled
from jaxeval.run.multihost import exchange


def _batches(indices: list[int], size: int):
    for start in range(0, len(indices), size):
        yield indices[start:start + size]


def map_journaled(journal, keys: Sequence[str], compute: Callable[[list[int]], list[dict]], *,
                  batch_size: int = 1, desc: str = "samples", unit: str = "item") -> list[dict]:
    """The record of every key, in order.

    compute(indices) -> one JSON-serialisable record per index (into keys). This process's
    samples (i % count == index, journal.shard = (index, count); (0, 1) without a journal) go
    in fixed batches of batch_size; a batch is computed only when one of its samples is not in
    the journal. Every record is the JSON round-tripped one, so resumed and uninterrupted runs
    score identical values. A signal ends the loop between batches (interrupt.Terminated).
    """
    if len(set(keys)) != len(keys):
        seen = set()
        duplicate = next(k for k in keys if k in seen or seen.add(k))
        raise DataError(f"{desc}: two samples share the key {duplicate!r} (duplicate item id)")
    index, count = getattr(journal, "shard", (0, 1))
    mine = [i for i in range(len(keys)) if i % count == index]
    records = {}
    if journal is not None:
        records = {i: r for i in mine if (r := journal.get(keys[i])) is not None}
    with progress(desc=desc, total=len(mine), unit=unit, initial=len(records)) as bar:
        for batch in _batches(mine, max(1, batch_size)):
            checkpoint()  # a SIGTERM / SIGINT takes effect between batches (jaxeval/interrupt.py)
            todo = [i for i in batch if i not in records]
            if not todo:
                continue
            # the whole fixed batch again, so every sample is computed in the same company
            # (padding, bucket) as in an uninterrupted run; done ones keep their journaled record
            computed = compute(batch)
            if len(computed) != len(batch):
                raise ValueError(f"{desc}: {len(computed)} records for {len(batch)} samples")
            for i, record in zip(batch, computed):
                if i not in records:
                    records[i] = journaled(journal, keys[i], lambda: record)
            bar.update(len(todo))
    if count > 1:
        if journal is not None:
            journal.flush()
        for payload in exchange({str(i): r for i, r in records.items()}):
            records.update({int(i): r for i, r in payload.items()})
    missing = [keys[i] for i in range(len(keys)) if i not in records]
    if missing:
        raise RuntimeError(f"{desc}: no record gathered for {missing[0]} (and {len(missing) - 1} more)")
    return [records[i] for i in range(len(keys))]
