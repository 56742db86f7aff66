"""run_agent_bench: load, read, score every requested config and length; the card's output.

Output: `rows` (the card's headline rows, in its order and wording, for the sets that were
run), `sets` (every metric per config and length, with counts), `reference` (null until the
rules configs exist), `mode` (what was actually used: "text", "stored_ids" or "mixed"),
plus `mode_requested` and `mode_notes` (why auto fell back to text).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.agent_bench.align import MODES
from jaxeval.benchmarks.agent_bench.data import CONFIGS, SPLITS, load_split
from jaxeval.benchmarks.agent_bench.facts import facts_metrics, score_facts_item
from jaxeval.errors import ConfigError, DataError

IMPLEMENTED_SETS = ("facts",)


@dataclasses.dataclass(frozen=True)
class HeadlineRow:
    title: str  # the card's wording
    config: str
    split: str
    metric: str  # key in sets[config][split]


# In the card's order. Rows of configs not implemented yet are added here, in place, when
# they are: tool_calls ("Distant tool calls at 8k / 32k tokens", far accuracy), then the rules
# rows (follow at 8k / 32k, worst retained over 12 cells, per language).
HEADLINE_ROWS = (
    HeadlineRow("Facts recalled at 8k tokens", "facts", "8k", "query_accuracy"),
    HeadlineRow("Facts recalled at 32k tokens", "facts", "32k", "query_accuracy"),
)


def _check_choice(kind: str, chosen: Sequence[str], available: Sequence[str]) -> None:
    for name in chosen:
        if name not in available:
            raise DataError(f"unknown {kind} '{name}'; available: {', '.join(available)}")


def run_agent_bench(backend, tokenizer, data: str | Path, sets: Sequence[str] = ("facts",),
                    lengths: Sequence[str] = ("8k", "32k"), limit: int | None = None,
                    mode: str = "auto") -> dict:
    """Score `backend` (anything with read(ids, positions, tokens)) on longctx-agent-bench.

    data: a local folder in the hub layout or a hub id. sets: configs of the card (only
    "facts" so far). lengths: "8k", "32k". limit: the first N items per config and length.
    mode: "auto" (stored qwen_* ids when present and consistent, else text) or "text".
    """
    sets, lengths = tuple(sets), tuple(lengths)
    for name in sets:
        if name in CONFIGS and name not in IMPLEMENTED_SETS:
            raise DataError(f"set '{name}' is not supported by jaxeval yet; available: "
                            f"{', '.join(IMPLEMENTED_SETS)}")
    _check_choice("set", sets, IMPLEMENTED_SETS)
    _check_choice("length", lengths, SPLITS)
    if mode not in MODES:
        raise ConfigError(f"unknown mode '{mode}'; available: {', '.join(MODES)}")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive number of items, got {limit!r}")

    results: dict[str, dict[str, dict]] = {}
    notes: list[str] = []
    for config in sets:
        for split in lengths:
            items = load_split(data, config, split)[:limit]
            outcomes = [score_facts_item(backend, tokenizer, item, split, mode) for item in items]
            results.setdefault(config, {})[split] = facts_metrics(outcomes)
            for outcome in outcomes:
                if outcome.mode_note:
                    note = f"{config}/{split}: {outcome.mode_note}"
                    if note not in notes:
                        notes.append(note)
    used = {metrics["mode"] for splits in results.values() for metrics in splits.values()} - {None}
    return {
        "rows": headline_rows(results),
        "sets": results,
        "reference": None,
        "mode": used.pop() if len(used) == 1 else ("mixed" if used else None),
        "mode_requested": mode,
        "mode_notes": notes,
    }


def headline_rows(sets: dict[str, dict[str, dict]]) -> list[dict]:
    """The card's headline rows whose config and length were run, in the card's order."""
    return [
        {"row": row.title, "value": sets[row.config][row.split][row.metric],
         "config": row.config, "split": row.split, "metric": row.metric}
        for row in HEADLINE_ROWS
        if row.split in sets.get(row.config, {})
    ]


def format_rows_table(result: dict) -> str:
    """The headline rows as an aligned terminal table (values to two decimals, n/a if none)."""
    header = ("row", "value", "from", "scored")
    lines = []
    for row in result["rows"]:
        counts = result["sets"][row["config"]][row["split"]]
        lines.append((row["row"], "n/a" if row["value"] is None else f"{row['value']:.2f}",
                      f"{row['config']}/{row['split']}", f"{counts['scored']} of {counts['queries']}"))
    widths = [max(len(cells[i]) for cells in (header, *lines)) for i in range(len(header))]

    def render(cells: Sequence[str]) -> str:
        left, value, *rest = cells
        return "  ".join([f"{left:<{widths[0]}}", f"{value:>{widths[1]}}",
                          *(f"{cell:<{width}}" for cell, width in zip(rest, widths[2:]))]).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *(render(cells) for cells in lines)])
