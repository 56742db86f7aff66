"""How many executables each jitted engine entry point holds: one per shape bucket it met (length
rung, batch rows, chunk), so the counts show whether a run compiled once per bucket."""

from __future__ import annotations

ENTRY_POINTS = {
    "jaxeval.engine.read": ("prefill_chunk", "prefill_hybrid_chunk", "gather_rows", "read_head"),
    "jaxeval.engine.kv_cache": ("prefill_rows", "decode_step"),
    "jaxeval.engine.bounded_kv": ("compact_row", "decode_step_bounded"),
    "jaxeval.engine.hybrid_generate": ("prefill_hybrid_row", "decode_hybrid_step"),
}


def compile_counts() -> dict[str, int]:
    """Entry point name -> executables it holds in this process (modules not yet imported are skipped)."""
    import sys

    counts = {}
    for module_name, names in ENTRY_POINTS.items():
        module = sys.modules.get(module_name)
        for name in names:
            fn = getattr(module, name, None)
            if hasattr(fn, "_cache_size"):
                counts[name] = fn._cache_size()
    return counts
