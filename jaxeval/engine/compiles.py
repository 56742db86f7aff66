"""How many executables each jitted engine entry point holds: one per shape bucket it met (length
rung, batch rows, chunk), so the counts show whether a run compiled once per bucket."""

from __future__ import annotations

ENTRY_POINTS = {
    "jaxeval.engine.read": ("prefill_chunk", "prefill_hybrid_chunk", "gather_rows", "read_head"),
    "jaxeval.engine.generate": ("prefill_row", "prefill_rows", "decode_step"),
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
