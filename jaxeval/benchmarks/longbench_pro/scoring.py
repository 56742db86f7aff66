"""Scoring prediction rows: one metric per row with the evaluator's failure rules, then the summary.

A prediction row is what the official harness writes to its inference JSONL (and what jaxeval
writes per sample): the record's labels (id, language, token_length, primary_task,
secondary_task, contextual_requirement, difficulty), answer, prediction and bon_idx (the run,
1-based). Other fields are carried along untouched.
"""

from __future__ import annotations

from typing import Sequence

from jaxeval.benchmarks.longbench_pro.metrics import DEFAULT_OPTIONS, ScoringOptions, SemanticSimilarity, calculate_metric
from jaxeval.benchmarks.longbench_pro.summary import extra_breakdowns, official_summary
from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS
from jaxeval.errors import DataError

LABEL_FIELDS = ("id", *DIMENSIONS, "secondary_task")


def check_row(row, where: str) -> None:
    """Raise DataError naming `where`, the row's id and the field when a prediction row is off."""
    if not isinstance(row, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if isinstance(row.get("id"), str):
        where = f"{where} (id '{row['id']}')"
    for field in LABEL_FIELDS:
        if not isinstance(row.get(field), str):
            raise DataError(f"{where}: field '{field}' must be a string, got {row.get(field)!r:.60}")
    from jaxeval.benchmarks.longbench_pro.tasks import SECONDARY_TASKS

    if row["secondary_task"] not in SECONDARY_TASKS:  # the official metric table would score it a silent 0
        raise DataError(f"{where}: field 'secondary_task' is {row['secondary_task']!r}, not a LongBench Pro task")
    if "prediction" not in row:  # null is the official "no answer" (scored as ""); a missing field is a broken file
        raise DataError(f"{where}: no field 'prediction' (null for a run that produced no answer)")
    if row["language"] not in DIMENSIONS["language"]:
        raise DataError(f"{where}: field 'language' is {row['language']!r}; expected Chinese or English")
    answer = row.get("answer")
    if not isinstance(answer, list) or not all(isinstance(a, str) for a in answer):
        raise DataError(f"{where}: field 'answer' must be a list of strings, got {answer!r:.60}")
    if row.get("prediction") is not None and not isinstance(row.get("prediction"), str):
        raise DataError(f"{where}: field 'prediction' must be a string or null, got {type(row['prediction']).__name__}")
    bon = row.get("bon_idx")
    if not isinstance(bon, int) or isinstance(bon, bool) or bon < 1:
        raise DataError(f"{where}: field 'bon_idx' must be a run number >= 1, got {bon!r}")


def score_row(row: dict, semsim: SemanticSimilarity | None, options: ScoringOptions = DEFAULT_OPTIONS) -> dict:
    """The row with metric, success and (on failure) error set; a null prediction counts as ""."""
    prediction = row.get("prediction") or ""
    outcome = calculate_metric(row["secondary_task"], row["answer"], prediction, row["language"] == "Chinese",
                               semsim, options)
    scored = {**row, "metric": outcome.value, "success": outcome.success}
    if outcome.error is not None:
        scored["error"] = outcome.error
    else:
        scored.pop("error", None)
    return scored


def summarize_rows(rows: Sequence[dict], bon_num: int | None = None, date: str | None = None) -> dict:
    """{"summary": official summary JSON, "extra": jaxeval's breakdowns} for scored rows."""
    if not rows:
        raise DataError("no prediction rows to summarise")
    bon = bon_num if bon_num is not None else max(row["bon_idx"] for row in rows)
    failed = sum(1 for row in rows if not row["success"])
    return {"summary": official_summary(rows, failed, bon, date), "extra": extra_breakdowns(rows, bon)}
