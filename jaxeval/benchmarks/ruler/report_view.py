"""RULER in `jaxeval report`: the 13-task average against length (with the 85.6 threshold and the
effective length), each task's score against length, and per run a task x length heatmap.
Teacher-forced runs are drawn as what they are: greedy-match rates, titled as not RULER's score.
Takes [(run label, section)] for the runs that have the task."""

from __future__ import annotations

from typing import Any, Sequence

from jaxeval.benchmarks.ruler.tasks import TASKS, THRESHOLD
from jaxeval.report.data import BenchmarkView, Figure, Panel, fmt, number, row_table

Pairs = Sequence[tuple[str, Any]]
SCALE = (0.0, 100.0)


def _value(unit: dict) -> float | None:
    if unit.get("teacher_forced"):
        return number(unit["teacher_forced"].get("greedy_match"))
    return number(unit.get("score"))


def _lengths(pairs: Pairs) -> tuple[str, ...]:
    return tuple(str(n) for n in sorted({int(u["length"]) for _, s in pairs for u in s.get("units") or ()
                                         if str(u.get("length")).isdigit()}))


def ruler_view(pairs: Pairs) -> BenchmarkView:
    view = BenchmarkView("ruler")
    labels = [label for label, _ in pairs]
    lengths = _lengths(pairs)
    tf = [label for label, s in pairs if s.get("mode") == "teacher_forced"]
    if tf:
        view.notes.append(f"{', '.join(tf)}: TEACHER-FORCED DIAGNOSTIC (greedy match of the gold answer), "
                          "NOT the official RULER score")
    cells, averages, per_task, heat = {}, {}, {}, []
    for label, section in pairs:
        units = [u for u in section.get("units") or () if isinstance(u, dict)]
        cells[label] = {f"{u['task']} @ {u['length']}": fmt(_value(u)) if _value(u) is not None else
                        ("skipped" if u.get("skip_reason") else "-") for u in units}
        cells[label].update({f"average @ {n}": fmt(v) for n, v in (section.get("averages") or {}).items()})
        cells[label]["effective length"] = str(section.get("effective_length"))
        averages[label] = {n: number(v) for n, v in (section.get("averages") or {}).items()}
        grid: dict[str, dict[str, float | None]] = {}
        for u in units:
            per_task.setdefault(u["task"], {}).setdefault(label, {})[str(u["length"])] = _value(u)
            grid.setdefault(u["task"], {})[str(u["length"])] = _value(u)
        if grid:
            rows = tuple(t for t in TASKS if t in grid)
            heat.append(Panel(f"{label}: task x length" + (" (teacher-forced, not RULER's score)" if label in tf else ""),
                              "context length", "task", lengths, grid, "heatmap", y_range=SCALE, rows=rows))
        for u in units:
            if u.get("skip_reason"):
                view.issues.append((label, f"{u['task']} @ {u['length']}: {u.get('skipped', 0)} samples skipped",
                                    u["skip_reason"]))
    view.tables.append(row_table("RULER scores (0-100) per task and length, averages and effective length",
                                 "task @ length", labels, cells))
    if any(v is not None for points in averages.values() for v in points.values()):
        threshold = {"threshold 85.6": {n: THRESHOLD for n in lengths}}
        view.figures.append(Figure("ruler_length", "RULER: 13-task average against context length",
                                   (Panel("average", "context length", "average score (0-100)", lengths,
                                          {**averages, **threshold}, y_range=SCALE),),
                                   "effective length: the largest length whose average is above 85.6"))
        view.length_curve, view.curve_name = averages, "RULER average"
    if per_task:
        view.figures.append(Figure("ruler_tasks", "RULER: each task against context length", tuple(
            Panel(task, "context length", "score (0-100)", lengths, by_run, y_range=SCALE)
            for task, by_run in per_task.items())))
    if heat:
        view.figures.append(Figure("ruler_heatmap", "RULER: task x context length", tuple(heat),
                                   "cell: the task's score at that length"))
    return view
