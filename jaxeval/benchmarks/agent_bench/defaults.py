"""Where the embedded sample lives and how comma-separated lists of configs and lengths read
(shared by the benchmark's settings and `jaxeval agent-bench`)."""

from __future__ import annotations

from pathlib import Path

EMBEDDED_AGENT_DATA = Path(__file__).resolve().parents[2] / "assets" / "agent_bench_sample"


def split_list(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())
