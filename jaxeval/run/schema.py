"""The results JSON of a run, laid out as docs/results_schema.md (version SCHEMA_VERSION)."""

from __future__ import annotations

import datetime
import hashlib
import json

from jaxeval.run.lm_eval_view import lm_eval_view
from jaxeval.run.metadata import device_info, git_sha, model_info, package_versions

SCHEMA_VERSION = 1
VOLATILE_FIELDS = ("date", "timing", "plan")  # differ between a resumed and an uninterrupted run
# sections a benchmark's summarize(task, result) hook fills, per task or per leaf task
SUMMARY_SECTIONS = ("results", "groups", "headline", "higher_is_better", "n-samples", "lengths", "configs",
                    "versions", "truncation", "deviations", "judge")


def chat_template_sha(tokenizer) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return None
    text = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def empty_results() -> dict:
    """The sections in the documented order, empty."""
    return {"schema_version": SCHEMA_VERSION, "results": {}, "groups": {}, "group_subtasks": {}, "headline": {},
            "higher_is_better": {}, "n-samples": {}, "lengths": {}, "configs": {}, "versions": {},
            "truncation": {}, "chat_template": {"sha256": None, "applied": {}}, "judge": {}, "deviations": {},
            "details": {}}


def add_task(results: dict, task: str, result: dict, summary: dict | None) -> None:
    """Put one task's benchmark result (and its summarize() output, if any) into results."""
    results["details"][task] = result
    if summary is None:
        return
    unknown = set(summary) - set(SUMMARY_SECTIONS) - {"chat_template"}
    if unknown:
        raise ValueError(f"summarize({task!r}) returned unknown sections {sorted(unknown)}")
    for section in ("results", "higher_is_better", "n-samples", "lengths"):
        results[section].update(summary.get(section, {}))
    results["group_subtasks"][task] = list(summary.get("results", {}))
    for section in ("groups", "headline", "configs", "versions", "truncation", "deviations", "judge"):
        if section in summary:
            results[section][task] = summary[section]
    if "chat_template" in summary:
        results["chat_template"]["applied"][task] = summary["chat_template"]


def finish_results(results: dict, *, config: dict, config_hash: str, model, run_name: str, journal,
                   timing: dict) -> dict:
    """The run-wide fields: config, model, devices, versions, git sha, date and timing."""
    results["chat_template"]["sha256"] = chat_template_sha(model.tokenizer)
    results.update({
        "config": config,
        "config_hash": config_hash,
        "model": model_info(model),
        "run_name": run_name,
        "journal": {"path": journal.path, "records": len(journal)} if journal is not None else None,
        "devices": device_info(),
        "git_hash": git_sha(),
        "package_versions": package_versions(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "timing": {**timing, "tokens_read": model.stats["tokens"], "sequences_read": model.stats["reads"]},
    })
    results["results_lm_eval"] = lm_eval_view(results["results"])  # "<metric>,none" keys (lm-eval's reading)
    return results


def strip_volatile(results: dict) -> dict:
    """results without the fields that legitimately differ between two runs of the same command."""
    return {key: value for key, value in results.items() if key not in VOLATILE_FIELDS}


def dumps_samples(task: str, samples: list[dict]) -> str:
    return "".join(json.dumps({"task": task, **sample}, ensure_ascii=False, allow_nan=True) + "\n"
                   for sample in samples)
