"""LongBench Pro's task table, report dimensions and per-model settings (docs/provenance.md#longbench-pro).

Facts only: which metric scores each of the 25 secondary tasks (the official evaluator's table),
the orders of the summary's breakdown keys, the per-model truncation lengths L and model types
of the official runs, and the generation budgets.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

HUB_ID = "caskcsg/LongBench-Pro"
HUB_FILE = "longbench_pro.json"
SPLIT = "test"
SHIPPED_SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "longbench_pro_sample" / "longbench_pro_sample.json"

METRIC_NAMES = ("NDCG", "Pairwise_Accuracy", "Accuracy", "F1_Score", "SubEM", "Summary")


@dataclasses.dataclass(frozen=True)
class SecondaryTask:
    name: str  # as in the data: "T3.2 Single-Hop Fact QA" (no "." after the code)
    primary: str  # "T3. Evidence-Grounded QA" (with the ".")
    metric: str  # one of METRIC_NAMES
    contextual_requirement: str  # "Full" | "Partial"

    @property
    def code(self) -> str:
        return self.name.split(" ", 1)[0]


PRIMARY_TASKS = (
    "T1. Retrieval & Ranking",
    "T2. Sequencing & Structure Reconstruction",
    "T3. Evidence-Grounded QA",
    "T4. Summarization & Synthesis",
    "T5. Attribution & Citation Alignment",
    "T6. Aggregation & Clustering",
    "T7. Consistency & Compliance Checking",
    "T8. Structured & Numeric Reasoning",
    "T9. Version & Code Diff Analysis",
    "T10. Rule Induction & In-Context Learning",
    "T11. Dialogue Memory & Long-Horizon Tracking",
)

_TABLE = (  # (secondary task, metric, contextual requirement); the primary follows from the code
    ("T1.1 Global Cohesive Retrieval", "NDCG", "Full"),
    ("T1.2 Key-Snippet Retrieval", "NDCG", "Partial"),
    ("T2.1 Global Timeline Reconstruction", "Pairwise_Accuracy", "Full"),
    ("T2.2 Local Causal Chain Sorting", "Pairwise_Accuracy", "Partial"),
    ("T3.1 Multi-Doc Integration QA", "Accuracy", "Full"),
    ("T3.2 Single-Hop Fact QA", "Accuracy", "Partial"),
    ("T4.1 Global-Coverage Constrained Summary", "Summary", "Full"),
    ("T4.2 Query-Focused Summary", "Summary", "Partial"),
    ("T5.1 Full-Sentence Citation Alignment", "F1_Score", "Full"),
    ("T5.2 Key-Statement Citation Alignment", "F1_Score", "Partial"),
    ("T6.1 Large-Scale Document Clustering", "SubEM", "Full"),
    ("T6.2 Targeted Subset Cluster Identification", "F1_Score", "Partial"),
    ("T6.3 Global Frequency Analysis", "Pairwise_Accuracy", "Full"),
    ("T7.1 Global Conflict & Inconsistency Localization", "F1_Score", "Full"),
    ("T7.2 Targeted Rule or Condition Violation Detection", "F1_Score", "Partial"),
    ("T7.3 Comprehensive Error & Anomaly Sweep", "F1_Score", "Full"),
    ("T8.1 Structured Multi-Source Consistency Verification", "SubEM", "Full"),
    ("T8.2 Single-Source Targeted Aggregation", "SubEM", "Partial"),
    ("T8.3 Long-Context Procedural State Tracking", "SubEM", "Full"),  # the code says SubEM (not F1)
    ("T9.1 Dependency-Aware Multi-Version Impact Analysis", "F1_Score", "Full"),
    ("T9.2 Localized Interface Change Detection", "F1_Score", "Partial"),
    ("T10.1 Large-Scale In-Context Rule Induction", "SubEM", "Full"),
    ("T10.2 Targeted Example-Based Rule Induction", "SubEM", "Partial"),
    ("T11.1 Long-Range Entity & Commitment Tracking", "Accuracy", "Full"),
    ("T11.2 Short-Range Reference Resolution & State Query", "Accuracy", "Partial"),
)


def _primary_of(name: str) -> str:
    prefix = name.split(".", 1)[0] + "."
    return next(p for p in PRIMARY_TASKS if p.startswith(prefix + " "))


SECONDARY_TASKS: dict[str, SecondaryTask] = {
    name: SecondaryTask(name, _primary_of(name), metric, requirement) for name, metric, requirement in _TABLE
}

# The official summary's breakdown dimensions, each with its key order.
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "token_length": ("8k", "16k", "32k", "64k", "128k", "256k"),
    "contextual_requirement": ("Full", "Partial"),
    "difficulty": ("Easy", "Moderate", "Hard", "Extreme"),
    "primary_task": PRIMARY_TASKS,
    "language": ("Chinese", "English"),
}
LANGUAGES = DIMENSIONS["language"]

MODES = ("nonthinking", "thinking")
MODEL_TYPES = ("Instruct", "Thinking", "Mixed")
RUNS_PER_SAMPLE = 3  # the official bon_num
# Output budgets: "1k" and "8k"/"32k" in the paper; the exact integers are not published.
MAX_NEW_TOKENS = {"nonthinking": 1024, "thinking": 8192, "thinking_256k": 32768}
SUMMARY_PASS_THRESHOLD = 0.65  # pass@n for T4: a BoN score strictly above this

# Truncation length L (Qwen2.5 tokens of the whole prompt) of the official runs, by model.
OFFICIAL_TRUNCATION = {"128k": 120_000, "256k": 224_000, "Claude-3.7-Sonnet": 200_000, "GPT-5": 272_000,
                       "1M": 1_000_000}


def max_new_tokens_for(mode: str, context_class: str = "128k") -> int:
    """The official output budget of a mode; thinking runs of 256k-class models get 32k."""
    if mode == "nonthinking":
        return MAX_NEW_TOKENS["nonthinking"]
    return MAX_NEW_TOKENS["thinking_256k" if context_class == "256k" else "thinking"]
