"""--batch_size auto / auto:N: the largest generation batch whose KV cache fits beside the weights.

The run's own tasks are counted once on the plan's counting model (jaxeval/plan/command.py, batch
size 1) for the longest cache any sequence of the run needs (a read or a prompt plus its new
tokens); a row of the batch holds that cache (jaxeval.plan.cost.kv_bytes) and one prefill chunk's
activations (cost.prefill_activation_bytes: with short caches they are as large as the cache), the
weights are as stored (cost.weight_bytes), all per chip under the mesh (cost.per_chip). The memory is the first
device's (on CPU, where the device says nothing: the host's physical memory less this process's
resident memory); HEADROOM of it is spent, the rest left to activations and XLA's workspace.
The choice is capped at AUTO_CAP rows (lm-eval's --max_batch_size default), or N for auto:N.
"""

from __future__ import annotations

import os

from jaxeval.plan import cost

AUTO_CAP = 64
HEADROOM = 0.9


def auto_cap(batch_size) -> int | None:
    """The cap of an auto batch size (AUTO_CAP, or N of auto:N); None for a number."""
    if not isinstance(batch_size, str):
        return None
    return int(batch_size.split(":", 1)[1]) if ":" in batch_size else AUTO_CAP


def rows_that_fit(memory: int, weights: int, bytes_per_row: int, mesh: dict, cap: int) -> int:
    """Rows whose caches and activations fit in HEADROOM of `memory` (per chip) beside the weights; 1 to cap."""
    free = HEADROOM * memory - cost.per_chip(weights, 0, mesh)
    per_row = cost.per_chip(0, bytes_per_row, mesh)
    return max(1, min(cap, int(free // per_row) if per_row > 0 else cap))


def _memory() -> tuple[int, str]:
    from jaxeval.plan.command import _current_rss
    from jaxeval.plan.hardware import device_memory_bytes

    device = device_memory_bytes()
    if device is not None:
        return device, "device"
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") - _current_rss(), "host"


def choose_batch_size(flags, tasks: list[str]) -> dict:
    """The chosen batch size of a run's flags (jaxeval.options.flags.RunFlags) and what it was chosen
    from (recorded as config.batch_size_auto)."""
    from jaxeval.plan.command import count_tasks, counting_model, memory_inputs

    single = flags.with_run(batch_size=1)
    model, gguf = counting_model(single.model)
    counted = count_tasks(single, tasks, model)
    dtype, mesh, weights = memory_inputs(single.model, model.config, gguf)
    lengths = [cost.cache_lengths(recorder) for recorder, _ in counted.values()]
    longest = max([read for read, _ in lengths] + [gen for _, (_, gen) in lengths] + [1])
    kv_per_row = cost.kv_bytes(model.config, 1, longest, dtype)
    activations = cost.prefill_activation_bytes(model.config, min(model.prefill_chunk, longest), dtype)
    memory, source = _memory()
    cap = auto_cap(flags.run.batch_size)
    return {"chosen": rows_that_fit(memory, weights, kv_per_row + activations, mesh, cap), "cap": cap,
            "longest_length": longest, "kv_bytes_per_row": kv_per_row, "activation_bytes_per_row": activations,
            "weights_bytes": weights, "memory_bytes": memory, "memory": source, "headroom": HEADROOM}


def resolve_batch_size(flags, tasks: list[str]):
    """With --batch_size auto[:N]: choose, say so on stderr and return (the flags with the choice as
    their batch size, what choose_batch_size found); (the flags, None) for a number."""
    import sys

    if auto_cap(flags.run.batch_size) is None:
        return flags, None
    chosen = choose_batch_size(flags, tasks)
    print(f"--batch_size {flags.run.batch_size}: {chosen['chosen']} (longest cache {chosen['longest_length']} tokens, "
          f"{chosen['kv_bytes_per_row'] / 2**20:.1f} MiB of cache and {chosen['activation_bytes_per_row'] / 2**20:.1f} "
          f"MiB of prefill activations per row; {chosen['memory']} memory "
          f"{chosen['memory_bytes'] / 2**30:.1f} GiB, weights {chosen['weights_bytes'] / 2**30:.2f} GiB)",
          file=sys.stderr)
    return flags.with_run(batch_size=chosen["chosen"]), chosen
