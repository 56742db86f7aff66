"""HELMET (princeton-nlp/HELMET) and the AgenticLU evaluation subset, scored as HELMET's own code
scores them (princeton-nlp/HELMET@4526dfb, EvanZhuang/AgenticLU@5e2e23e; docs/provenance.md#helmet
maps each module to the upstream file and function, and lists the quirks).

Host side only (no JAX): configs (tasks.py), released-layout data with record checks (data.py),
HELMET's row and demo selection (samples.py), prompts (templates.py, prepare.py), two-stage
length control (truncation.py), metrics (metrics.py, rerank.py, alce.py), judges
(judging.py), category averages (scoring.py), generation (runner.py) and re-scoring of saved
outputs (rescore.py).
"""

from jaxeval.benchmarks.helmet.metrics import calculate_metrics, parse_output
from jaxeval.benchmarks.helmet.rescore import rescore
from jaxeval.benchmarks.helmet.runner import GenerationSettings, run_helmet
from jaxeval.benchmarks.helmet.scoring import collect, score_item
from jaxeval.benchmarks.helmet.tasks import CATEGORIES, EvalUnit, helmet_units, load_config

__all__ = ["CATEGORIES", "EvalUnit", "GenerationSettings", "calculate_metrics", "collect", "helmet_units",
           "load_config", "parse_output", "rescore", "run_helmet", "score_item"]
