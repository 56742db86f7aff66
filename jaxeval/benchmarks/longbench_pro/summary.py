"""Aggregation into the official summary JSON, plus jaxeval's extra breakdowns.

Input: scored rows in evaluation-file order, each a dict with id, bon_idx (1-based run),
metric, success and the dimension labels. As the official evaluator:
- a question's score is the mean of its runs; its labels are its first row's;
- overall and every breakdown are means over questions (sample-weighted, not means of means);
- inference_iteration_i_overall_metric: the mean over the rows of run i;
- BoN-n: per question the max over runs <= n (a tie keeps the first row seen);
- pass@n: the fraction of BoN-n scores == 1.0, or > 0.65 where 'T4' is in the primary task;
- failures (fail_samples_num) score 0 and stay in every denominator.
Breakdown keys come in the official order. The official code indexes every key of that order
and so fails on a subset that lacks one; here a missing value is left out instead.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from typing import Sequence

from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS, SECONDARY_TASKS, SUMMARY_PASS_THRESHOLD


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def question_means(rows: Sequence[dict], bon_num: int) -> tuple[list[dict], int]:
    """(one row per question with the mean metric over its runs, questions without bon_num runs)."""
    by_id: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_id[row["id"]].append(row)
    questions, inconsistent = [], 0
    for items in by_id.values():
        if len(items) != bon_num:
            inconsistent += 1
        questions.append({**items[0], "metric": sum(item["metric"] for item in items) / len(items)})
    return questions, inconsistent


def best_of_n(rows: Sequence[dict], n: int) -> list[dict]:
    best: dict[str, dict] = {}
    for row in rows:
        if row["bon_idx"] > n:
            continue
        if row["id"] not in best or row["metric"] > best[row["id"]]["metric"]:
            best[row["id"]] = row
    return list(best.values())


def pass_rate(best_rows: Sequence[dict]) -> float:
    passed = sum(1 for row in best_rows
                 if (row["metric"] > SUMMARY_PASS_THRESHOLD if "T4" in row["primary_task"] else row["metric"] == 1.0))
    return passed / len(best_rows) if best_rows else 0.0


def dimension_means(questions: Sequence[dict], dimension: str, order: Sequence[str] | None = None) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for question in questions:
        groups[question[dimension]].append(question["metric"])
    keys = [key for key in (order if order is not None else sorted(groups, key=_task_order)) if key in groups]
    return {key: _mean(groups[key]) for key in keys}


def _task_order(name: str) -> tuple:
    code = name.split(" ", 1)[0].rstrip(".").lstrip("T")
    return tuple(int(part) if part.isdigit() else 0 for part in code.split(".")) + (name,)


def official_summary(rows: Sequence[dict], fail_samples_num: int, bon_num: int, date: str | None = None) -> dict:
    """The official `<mode>_context-<L>_bon-<n>_summary.json` content for these scored rows."""
    questions, inconsistent = question_means(rows, bon_num)
    summary = {
        "date": date or datetime.datetime.now().strftime("%Y-%m-%d"),
        "total_questions_num": len(questions),
        "inference_iterations": bon_num,
        "total_samples_num": len(rows),
        "fail_samples_num": fail_samples_num,
        "inference_inconsistent_samples_num": inconsistent,
        "average_overall_metric": _mean([q["metric"] for q in questions]),
    }
    for i in range(1, bon_num + 1):
        summary[f"inference_iteration_{i}_overall_metric"] = _mean([r["metric"] for r in rows if r["bon_idx"] == i])
    for dimension, order in DIMENSIONS.items():
        summary[f"average_{dimension}_metric"] = dimension_means(questions, dimension, order)
    for n in range(1, bon_num + 1):
        best = best_of_n(rows, n)
        summary[f"BoN-{n}"] = {"overall_metric": _mean([r["metric"] for r in best]),
                               **{d: dimension_means(best, d, order) for d, order in DIMENSIONS.items()}}
        summary[f"pass@{n}"] = pass_rate(best)
    return summary


def extra_breakdowns(rows: Sequence[dict], bon_num: int) -> dict:
    """jaxeval's additions: secondary-task means, and question / failure counts per dimension value."""
    questions, _ = question_means(rows, bon_num)
    failed_ids = {row["id"] for row in rows if not row.get("success", True)}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for dimension in (*DIMENSIONS, "secondary_task"):
        table: dict[str, dict[str, int]] = {}
        for question in questions:
            entry = table.setdefault(question[dimension], {"questions": 0, "questions_with_failures": 0})
            entry["questions"] += 1
            entry["questions_with_failures"] += question["id"] in failed_ids
        order = DIMENSIONS.get(dimension) or sorted(table, key=_task_order)
        counts[dimension] = {key: table[key] for key in order if key in table}
    return {
        "average_secondary_task_metric": dimension_means(questions, "secondary_task",
                                                         [t for t in SECONDARY_TASKS]),
        "counts": counts,
        "failed_samples": sum(1 for row in rows if not row.get("success", True)),
    }


def format_table(summary: dict, extra: dict) -> str:
    """The headline and breakdowns x100 with two decimals, as the leaderboard shows them."""
    lines = [f"LongBench Pro overall: {100 * summary['average_overall_metric']:.2f}  "
             f"({summary['total_questions_num']} questions, {summary['total_samples_num']} samples, "
             f"{summary['fail_samples_num']} failed)"]
    for dimension in DIMENSIONS:
        values = summary[f"average_{dimension}_metric"]
        lines.append(f"  {dimension}: " + ", ".join(f"{key} {100 * value:.2f}" for key, value in values.items()))
    lines.append("  secondary_task: " + ", ".join(f"{key.split(' ', 1)[0]} {100 * value:.2f}"
                                                   for key, value in extra["average_secondary_task_metric"].items()))
    bon = summary["inference_iterations"]
    lines.append(f"  BoN-{bon} {100 * summary[f'BoN-{bon}']['overall_metric']:.2f}, "
                 f"pass@1 {100 * summary['pass@1']:.2f}, pass@{bon} {100 * summary[f'pass@{bon}']:.2f}")
    return "\n".join(lines)
