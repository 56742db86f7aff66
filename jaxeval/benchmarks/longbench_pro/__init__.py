"""LongBench Pro (Chen et al. 2026): 1,500 bilingual long-context records in 25 tasks, scored as
the official caskcsg/longcontext harness (LongBench-Pro/modules at 50cdfaf) scores them;
docs/provenance.md#longbench-pro maps each module to the official function and lists the quirks.

Load and check records (data.py), build prompts with the official middle truncation and the
model's chat template (prompts.py), generate every sample `runs` times (runner.py), score with
the official metrics and failure rules (metrics.py, scoring.py; T4's SemSim in semsim.py) and
aggregate into the official summary JSON (summary.py); re-score saved predictions without a
model (rescore.py). The CLI hooks are in cli.py.
"""

from jaxeval.benchmarks.longbench_pro.data import LongBenchProRecord, load_records, validate_record
from jaxeval.benchmarks.longbench_pro.metrics import (
    METRICS, ROUGE_RECURSION_MODELS, ScoringOptions, calculate_metric, summary, summary_max_rouge_l,
)
from jaxeval.benchmarks.longbench_pro.rescore import rescore_predictions
from jaxeval.benchmarks.longbench_pro.runner import run_longbench_pro
from jaxeval.benchmarks.longbench_pro.scoring import score_row, summarize_rows
from jaxeval.benchmarks.longbench_pro.semsim import SemSimSettings, load_semsim
from jaxeval.benchmarks.longbench_pro.summary import official_summary

__all__ = [
    "METRICS", "ROUGE_RECURSION_MODELS", "LongBenchProRecord", "ScoringOptions", "SemSimSettings",
    "calculate_metric", "load_records", "load_semsim", "official_summary", "rescore_predictions",
    "run_longbench_pro", "score_row", "summarize_rows", "summary", "summary_max_rouge_l", "validate_record",
]
