"""RULER's aggregates and result sections: the average over the tasks per length, the effective
length as the paper defines it (the largest length whose 13-task average is above 85.6, the
Llama-2-7B 4k score), the printed table, and the results-JSON sections."""

from __future__ import annotations

from jaxeval.benchmarks.ruler.tasks import TASKS, THRESHOLD

VERSION = "1"
DEVIATIONS_DEFAULT_DATA = ("jaxeval's shipped licence-clean stand-ins for RULER's {kinds} (see data): scores are "
                           "not comparable with RULER's published numbers")


def length_averages(units: list[dict], tasks, teacher_forced: bool) -> dict:
    """{"averages": {length: mean of the task scores or None}, "effective_length", "effective_length_note"}.

    A length's average is given only when every task asked for was scored there; the effective
    length only when all 13 were: the paper's threshold is on the 13-task average."""
    by_length: dict[str, dict[str, float | None]] = {}
    for unit in units:
        by_length.setdefault(str(unit["length"]), {})[unit["task"]] = unit.get("score")
    averages = {}
    for length, scores in by_length.items():
        complete = all(scores.get(task) is not None for task in tasks)
        averages[length] = round(sum(scores[t] for t in tasks) / len(tasks), 2) if complete and not teacher_forced else None
    all_tasks = set(tasks) == set(TASKS)
    passing = [int(length) for length, value in averages.items() if value is not None and value > THRESHOLD]
    if teacher_forced:
        note = "not given in teacher-forced mode (it is not RULER's score)"
    elif not all_tasks:
        note = f"needs all 13 tasks (this run has {len(set(tasks))})"
    elif not any(value is not None for value in averages.values()):
        note = "no length has all 13 tasks scored"
    elif not passing:
        note = f"no length run averages above {THRESHOLD}: below the shortest length run"
    else:
        note = f"the largest length whose 13-task average is above {THRESHOLD}"
    effective = max(passing) if passing and all_tasks and not teacher_forced else None
    return {"averages": averages, "effective_length": effective, "effective_length_note": note,
            "threshold": THRESHOLD}


def format_table(result: dict) -> str:
    lengths = [str(n) for n in result["lengths"]]
    cells = {(u["task"], str(u["length"])): u for u in result["units"]}
    tf = result["mode"] == "teacher_forced"
    lines = []
    if tf:
        lines.append("RULER TEACHER-FORCED DIAGNOSTIC - NOT the official RULER score "
                     "(cells: greedy match of the gold answer %, then mean gold log-prob per token)")
    else:
        lines.append("RULER (official generate-and-match score, 0-100)")
    lines.append("task".ljust(18) + "".join(n.rjust(16) for n in lengths))
    for task in result["tasks"]:
        row = task.ljust(18)
        for n in lengths:
            u = cells.get((task, n), {})
            if tf and u.get("teacher_forced"):
                d = u["teacher_forced"]
                cell = f"{d['greedy_match']:.1f}/{d['gold_logprob_mean']:.2f}"
            elif u.get("score") is not None:
                cell = f"{u['score']:.2f}"
            else:
                cell = "skipped" if u.get("skip_reason") else "-"
            row += cell.rjust(16)
        lines.append(row)
    if not tf:
        lines.append("average".ljust(18) + "".join(
            (f"{result['averages'][n]:.2f}" if result["averages"].get(n) is not None else "-").rjust(16) for n in lengths))
        eff = result["effective_length"]
        lines.append(f"effective length (> {THRESHOLD}): {eff if eff is not None else 'none'} - "
                     f"{result['effective_length_note']}")
    for unit in result["units"]:
        if unit.get("skip_reason"):
            lines.append(f"skipped {unit['task']} @ {unit['length']}: {unit['skipped']} samples - {unit['skip_reason']}")
    shipped = [k for k, v in (result.get("data") or {}).items() if isinstance(v, dict) and v.get("shipped")]
    if shipped:
        lines.append(f"data: shipped stand-ins for {', '.join(shipped)} (not RULER's files; scores not comparable "
                     f"with published RULER numbers)")
    return "\n".join(lines)


def describe() -> dict:
    return {"ruler": {"about": "RULER (NVIDIA): 13 synthetic tasks (niah x8, vt, cwe, fwe, qa x2) generated "
                               "locally with the model's tokenizer at any length; effective length at 85.6",
                      "configs": list(TASKS), "lengths": ["any (--ruler_lengths, default 4096)"]}}


def summarize(result: dict) -> dict:
    tf = result["mode"] == "teacher_forced"
    results, n_samples, lengths, hib = {}, {}, {}, {}
    for unit in result["units"]:
        leaf = f"ruler/{unit['task']}/{unit['length']}"
        if tf:
            d = unit.get("teacher_forced") or {}
            results[leaf] = {"tf_greedy_match": d.get("greedy_match"), "tf_gold_logprob_mean": d.get("gold_logprob_mean")}
        else:
            results[leaf] = {unit["metric"]: unit.get("score")}
        hib[leaf] = {name: True for name in results[leaf]}
        n_samples[leaf] = {"original": unit.get("requested"), "effective": unit.get("samples", 0),
                           "skipped": unit.get("skipped", 0)}
        lengths[leaf] = str(unit["length"])
    groups = {f"ruler/average/{n}": v for n, v in result["averages"].items()}
    headline = [] if tf else [{"row": f"RULER average at {n}", "value": v, "metric": "average"}
                              for n, v in result["averages"].items()]
    if not tf:
        groups["ruler/effective_length"] = result["effective_length"]
        headline.append({"row": "RULER effective length (> 85.6)", "value": result["effective_length"],
                         "metric": "effective_length"})
    shipped = [k for k, v in (result.get("data") or {}).items() if isinstance(v, dict) and v.get("shipped")]
    deviations = ([DEVIATIONS_DEFAULT_DATA.format(kinds=", ".join(shipped))] if shipped else []) + (
        ["TEACHER-FORCED DIAGNOSTIC: not the official RULER score"] if tf else [])
    return {"results": results, "higher_is_better": hib, "n-samples": n_samples, "lengths": lengths,
            "groups": groups, "headline": headline, "versions": VERSION, "deviations": deviations,
            "configs": {"mode": result["mode"], "official_score": result["official_score"], "seed": result["seed"],
                        "num_samples": result["num_samples"], "limit": result["limit"], "data": result["data"],
                        "template": result["template"], "skipped_lengths": result["skipped_lengths"],
                        "effective_length_note": result.get("effective_length_note")},
            "chat_template": result["template"]}
