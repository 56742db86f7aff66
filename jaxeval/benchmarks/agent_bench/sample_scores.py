"""longctx-agent-bench in paired comparisons (`jaxeval report --reference`).

Per-target scores come from the --log_samples rows (the results file keeps only aggregates):
facts: each query, 1 if recalled else 0 (the mean is query_accuracy); tool_calls: each target,
1 if correct, grouped near / far as the headline's far_accuracy; unaligned targets are not scored.
Key: the item's journal key + "#<target>"; length: the split; depth: the distance bucket back to
the evidence (distance.py's ladder).

The rules configs are compared the agent bench's own way: follow and retained of the modified
run's effects against the reference run's (rules.py), per target paired by key, from both runs'
rules samples (their log-probs without and with the rule). A modified run made with
--agent_bench_reference_scores already holds them in its details; both are shown when present.
"""

from __future__ import annotations

from jaxeval.benchmarks.agent_bench.distance import distance_bucket
from jaxeval.report.data import Table, fmt


def _scored(aligned, correct) -> float | None:
    return (1.0 if correct else 0.0) if aligned else None


def agent_bench_sample_scores(task: str, section: dict | None, samples: list[dict] | None) -> list | None:
    from jaxeval.report.paired import SampleScore

    if not samples:
        return None
    scores = []
    for row in samples:
        config, split, key = row.get("config"), row.get("split"), row.get("key")
        if config == "facts":
            targets = [(f"{key}#{q.get('target_index', i)}", "facts", q.get("aligned"), q.get("recalled"),
                        q.get("distance_tokens")) for i, q in enumerate(row.get("queries") or ())]
        elif config == "tool_calls":
            targets = [(f"{key}#{i}", f"tool_calls {'far' if t.get('far') else 'near'}", t.get("aligned"),
                        t.get("correct"), t.get("distance_tokens")) for i, t in enumerate(row.get("targets") or ())]
        else:
            continue  # rules targets: follow / retained, below
        for target_key, group, aligned, correct, distance in targets:
            depth = distance_bucket(distance) if isinstance(distance, int) else None
            scores.append(SampleScore(target_key, group, split, _scored(aligned, correct), depth))
    return scores


def _rules_targets(samples: list[dict] | None) -> dict[str, dict]:
    return {row["key"]: row for row in samples or () if str(row.get("config", "")).startswith("rules")
            and isinstance(row.get("key"), str)}


def _pair(row: dict, prefix: str):
    without, with_rule = row.get(f"{prefix}without_rule"), row.get(f"{prefix}with_rule")
    return None if without is None or with_rule is None else (without, with_rule)


def rules_tables(reference: tuple, modified: tuple) -> list[Table]:
    """Follow / retained per rules config and split: modified against the reference run (from both
    runs' samples), and as the modified run computed them itself when it had reference scores."""
    from jaxeval.benchmarks.agent_bench.rules import cell_metrics

    ref_targets, mod_targets = _rules_targets(reference[1]), _rules_targets(modified[1])
    rows = []
    cells: dict[tuple[str, str], list[dict]] = {}
    for key, row in mod_targets.items():
        if key in ref_targets:
            cells.setdefault((row["config"], row["split"]), []).append(
                {"scores": _pair(row, "logprob_"), "reference": _pair(ref_targets[key], "logprob_")})
    for (config, split), targets in cells.items():
        cell = cell_metrics(targets, "all", "all")
        rows.append((f"{config}/{split}", fmt(cell["follow"]), fmt(cell["retained"]), str(cell["counted"]),
                     str(cell["targets"]), str(cell["unaligned"])))
    tables = []
    unpaired = len(set(ref_targets) ^ set(mod_targets))
    if rows or unpaired:
        title = ("Rules: follow and retained of the modified run against the reference run (per target, "
                 f"paired by key; counted: |reference effect| >= 1 nat){f'; {unpaired} targets in one run only' if unpaired else ''}")
        tables.append(Table(title, ("config/split", "follow", "retained", "counted", "targets", "unaligned"), tuple(rows)))
    own = (modified[0] or {}) if isinstance(modified[0], dict) else {}
    if (own.get("reference") or {}).get("source") not in (None, "self"):  # it was given reference scores
        rows = [(f"{config}/{split}", fmt(metrics.get("follow")), fmt(metrics.get("retained")))
                for config, splits in (own.get("sets") or {}).items() if config.startswith("rules")
                for split, metrics in (splits or {}).items()]
        tables.append(Table("Rules: follow and retained as the modified run computed them (--agent_bench_reference_"
                            "scores)", ("config/split", "follow", "retained"), tuple(rows)))
    return tables
