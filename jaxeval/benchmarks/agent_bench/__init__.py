"""longctx-agent-bench (thinletter/longctx-agent-bench): facts, tool calls and rules far back.

Host side only (no JAX): load and check items, align targets to the model's tokens, read
them through any backend with read(ids, positions, tokens), score, and build the card's
output, for all five configs (facts, tool_calls, rules_en / rules_cs / rules_de).
"""

from jaxeval.benchmarks.agent_bench.align import Alignment, align_stored_ids, align_text, stored_ids_problem
from jaxeval.benchmarks.agent_bench.data import (
    CONFIGS, HUB_ID, SHIPPED_DATA, SPLITS, FactsItem, FactsTarget, items_from_records, load_split,
    read_hub_records, split_files,
)
from jaxeval.benchmarks.agent_bench.facts import facts_metrics
from jaxeval.benchmarks.agent_bench.runner import (
    HEADLINE_ROWS, format_rows_table, headline_rows, run_agent_bench, score_facts_item, score_tool_calls_item,
)
from jaxeval.benchmarks.agent_bench.rules import rules_metrics
from jaxeval.benchmarks.agent_bench.schema import validate_record
from jaxeval.benchmarks.agent_bench.tool_calls import tool_calls_metrics

__all__ = [
    "CONFIGS", "HEADLINE_ROWS", "HUB_ID", "SHIPPED_DATA", "SPLITS", "Alignment", "FactsItem",
    "FactsTarget", "align_stored_ids", "align_text", "facts_metrics", "format_rows_table",
    "headline_rows", "items_from_records", "load_split", "read_hub_records", "run_agent_bench",
    "rules_metrics", "score_facts_item", "score_tool_calls_item", "split_files", "stored_ids_problem",
    "tool_calls_metrics", "validate_record",
]
