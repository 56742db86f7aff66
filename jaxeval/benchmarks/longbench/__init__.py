"""LongBench v1 (21 datasets) and LongBench-E (13, by length bucket), scored as the official
THUDM/LongBench scripts (LongBench/pred.py, eval.py, metrics.py at 2e00731) score them;
docs/provenance.md#longbench maps each module to the official function and lists the quirks.

Host side only (no JAX): load and check records, build prompts (official templates, middle
truncation by the model's tokenizer, chat format), generate through any backend with
generate(prompts, max_new_tokens, stop), score with the official metrics and aggregation,
and re-score official pred.py output without a model.
"""

from jaxeval.benchmarks.longbench.data import LongBenchRecord, download_data_zip, load_config, validate_record
from jaxeval.benchmarks.longbench.metrics import METRICS, ROUGE_RECURSION_MODELS, ScoringOptions
from jaxeval.benchmarks.longbench.predictions import (
    prediction_files, read_prediction_file, write_prediction_file,
)
from jaxeval.benchmarks.longbench.prompts import CHAT_FORMATS, apply_chat_format, build_prompt
from jaxeval.benchmarks.longbench.requests import GenerationRequest, build_request
from jaxeval.benchmarks.longbench.rescore import rescore_predictions
from jaxeval.benchmarks.longbench.results import format_scores_table, score_datasets, write_result_json
from jaxeval.benchmarks.longbench.runner import generate_predictions, run_longbench
from jaxeval.benchmarks.longbench.scoring import (
    PredictionRow, category_scores, e_scores, first_line, length_bucket, score_sample, v1_score,
)
from jaxeval.benchmarks.longbench.tasks import (
    BUCKETS, CONFIGS, DATASETS, E_DATASETS, HUB_ID, MODEL_PROMPT_BUDGETS, SHIPPED_SAMPLE, TASKS,
    LongBenchTask,
)
from jaxeval.benchmarks.longbench.truncation import TruncatedPrompt, prompt_budget, truncate_middle

__all__ = [
    "BUCKETS", "CHAT_FORMATS", "CONFIGS", "DATASETS", "E_DATASETS", "HUB_ID", "METRICS",
    "MODEL_PROMPT_BUDGETS", "ROUGE_RECURSION_MODELS", "SHIPPED_SAMPLE", "TASKS", "GenerationRequest",
    "LongBenchRecord", "LongBenchTask", "PredictionRow", "ScoringOptions", "TruncatedPrompt",
    "apply_chat_format", "build_prompt", "build_request", "category_scores",
    "download_data_zip", "e_scores", "first_line", "format_scores_table",
    "generate_predictions", "length_bucket", "load_config", "prediction_files", "prompt_budget",
    "read_prediction_file", "rescore_predictions", "run_longbench",
    "score_datasets", "score_sample", "truncate_middle", "v1_score", "validate_record",
    "write_prediction_file", "write_result_json",
]
