"""A modified run against its reference (`jaxeval report MODIFIED --reference ORIGINAL`, and
`jaxeval run ... --reference ORIGINAL`): per task, its samples paired by key, mean deltas
overall, per group and per length, each with a paired bootstrap interval (paired.py).

Per-sample scores come from each benchmark's sample_scores hook (jaxeval/benchmarks/base.py),
given the task's details section and, when the run wrote them, its --log_samples rows
(`<run name>.samples_<task>.jsonl` beside the results file). The two runs must share at least
one task, and each shared task's benchmark settings that change numbers (`<benchmark>_*` hashed
flags) must be equal, except `limit` (samples outside the smaller limit are counted as present
in one run only); the shared settings that differ (the modification: --quantize, --model_args,
a KV policy, the model path) are listed, not refused.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

from jaxeval.errors import DataError
from jaxeval.report.paired import LEVEL, RESAMPLES, SEED, Delta, Pairing, grouped_deltas, pair, paired_bootstrap
from jaxeval.report.data import Run, Table, shown_location

VOLATILE_CONFIG = ("output_path", "out", "log_samples", "config", "batch_size", "tasks", "limit")


@dataclasses.dataclass(frozen=True)
class TaskComparison:
    task: str
    pairing: Pairing | None  # None: no per-sample scores in one of the runs
    overall: Delta | None
    by_group: dict[str, Delta]
    by_length: dict[str, Delta]
    by_group_length: dict[tuple[str, str], Delta]
    sources: tuple[str, str]  # where each run's per-sample scores came from
    tables: list[Table]  # the benchmark's own comparisons (agent_bench: follow / retained)
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Comparison:
    reference: Run
    modified: Run
    tasks: list[TaskComparison]
    differences: list[tuple[str, str, str]]  # (setting, reference value, modified value)
    only_in: dict[str, list[str]]  # "reference" / "modified" -> tasks in that run only
    resamples: int = RESAMPLES
    seed: int = SEED
    level: float = LEVEL


def samples_path(run: Run, task: str) -> str | None:
    name = run.meta.get("run_name")
    if not isinstance(name, str) or not name:
        return None
    if "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        # a results file is data: its run_name never leads the report outside the file's folder
        raise DataError(f"{run.path}: run_name {name!r} is not a plain file name")
    from jaxeval.io.fs import is_url, join

    folder = run.path.rsplit("/", 1)[0] if is_url(run.path) else str(Path(run.path).parent)
    return join(folder, f"{name}.samples_{task}.jsonl")


def read_samples(path: str | None) -> list[dict] | None:
    """The --log_samples rows of a task, or None when the run wrote none; bad files are one line."""
    from jaxeval.io.inputs import read_text

    if path is None:
        return None
    try:
        text = read_text(path, name="samples file")
    except DataError as error:
        if str(error).endswith("no such samples file"):
            return None
        raise
    from jaxeval.io.rows import read_jsonl_rows

    rows = []
    for row, where in read_jsonl_rows(text.splitlines(), path):
        if not isinstance(row, dict):
            raise DataError(f"{where}: a sample is a JSON object, found {type(row).__name__}")
        rows.append(row)
    return rows


def check_comparable(reference: Run, modified: Run, benchmarks: Mapping) -> tuple[list[str], list[tuple[str, str, str]], dict]:
    """(shared tasks, differing shared settings, tasks in one run only); DataError when nothing
    can be compared or a shared task's benchmark settings differ. benchmarks: task -> its Benchmark
    (jaxeval.benchmarks.registry.run_tasks(), handed down by the caller)."""
    ref_tasks, mod_tasks = list(reference.sections), list(modified.sections)
    shared = [task for task in mod_tasks if task in ref_tasks]
    if not shared:
        raise DataError(f"{modified.path} and its reference {reference.path} share no task (modified: "
                        f"{', '.join(mod_tasks) or 'none'}; reference: {', '.join(ref_tasks) or 'none'})")
    ref_config, mod_config = reference.meta.get("config") or {}, modified.meta.get("config") or {}
    for task in shared:
        if task not in benchmarks:
            continue
        for key in sorted(benchmarks[task].setting_keys(hashed=True, compare=True)):
            if ref_config.get(key) != mod_config.get(key):
                raise DataError(f"{modified.path}: {task} ran with {key} = {mod_config.get(key)!r}, its reference "
                                f"{reference.path} with {ref_config.get(key)!r}; per-sample deltas need the same "
                                f"benchmark settings (rerun one of them with the other's)")
    every_benchmark = {key for benchmark in set(benchmarks.values()) for key in benchmark.setting_keys()}
    shared_settings = [key for key in sorted(set(ref_config) | set(mod_config))
                       if key not in every_benchmark and key not in VOLATILE_CONFIG]
    differences = [(key, json.dumps(ref_config.get(key)), json.dumps(mod_config.get(key))) for key in shared_settings
                   if key in ref_config and key in mod_config and ref_config[key] != mod_config[key]]
    only = [key for key in shared_settings if (key in ref_config) != (key in mod_config)]
    if only and ref_config and mod_config:  # another jaxeval version recorded other settings
        differences.append(("recorded in one run only (another jaxeval version?)", ", ".join(
            key for key in only if key in ref_config) or "-", ", ".join(key for key in only if key in mod_config) or "-"))
    for key in ("limit",):
        if ref_config.get(key) != mod_config.get(key):
            differences.append((key, json.dumps(ref_config.get(key)), json.dumps(mod_config.get(key))))
    ref_model, mod_model = reference.meta.get("model") or {}, modified.meta.get("model") or {}
    for key in ("path", "fingerprint", "dtype", "quantization", "kv_policy"):
        if isinstance(ref_model, dict) and isinstance(mod_model, dict) and ref_model.get(key) != mod_model.get(key):
            differences.append((f"model.{key}", json.dumps(ref_model.get(key)), json.dumps(mod_model.get(key))))
    only = {"reference": [t for t in ref_tasks if t not in shared], "modified": [t for t in mod_tasks if t not in shared]}
    return shared, differences, only


def task_sample_scores(run: Run, task: str, benchmark) -> tuple[list | None, list[dict] | None, str]:
    """(the task's SampleScores or None, its --log_samples rows or None, where the scores came from)."""
    path = samples_path(run, task)
    samples = read_samples(path)
    section = run.sections.get(task)
    scores = benchmark.sample_scores(task, section if isinstance(section, dict) else None, samples)
    if scores is None:
        shown = shown_location(path) if path else None  # the page is shared: no local folders
        where = "no per-sample scores in the results" + (f" and no {shown}" if samples is None and path else "")
        return None, samples, where
    return scores, samples, "the results file" + (f" and {shown_location(path)}" if samples is not None else "")


def compare_task(task: str, reference: Run, modified: Run, benchmarks: Mapping, resamples: int = RESAMPLES,
                 seed: int = SEED, level: float = LEVEL) -> TaskComparison:
    benchmark = benchmarks.get(task)
    if benchmark is None:
        return TaskComparison(task, None, None, {}, {}, {}, ("", ""), [], "no benchmark of jaxeval runs this task")
    ref_scores, ref_samples, ref_source = task_sample_scores(reference, task, benchmark)
    mod_scores, mod_samples, mod_source = task_sample_scores(modified, task, benchmark)
    tables = benchmark.reference_tables(task, (reference.sections.get(task), ref_samples),
                                        (modified.sections.get(task), mod_samples))
    if ref_scores is None or mod_scores is None:
        missing = [f"{run.label} ({source})" for run, scores, source in
                   ((reference, ref_scores, ref_source), (modified, mod_scores, mod_source)) if scores is None]
        return TaskComparison(task, None, None, {}, {}, {}, (ref_source, mod_source), tables,
                              f"no paired deltas: {'; '.join(missing)}; rerun with --log_samples")
    pairing = pair(ref_scores, mod_scores, (reference.path, modified.path))
    args = (resamples, seed, level)
    pairs = pairing.pairs
    overall = paired_bootstrap([r.score for r, _ in pairs], [m.score for _, m in pairs], *args)

    def length(p):
        return p.length

    by_group = grouped_deltas(pairs, lambda s: s.group, *args)
    by_length = grouped_deltas(_with_lengths(pairs), length, *args)
    by_both = grouped_deltas(_with_lengths(pairs), lambda s: (s.group, s.length) if s.length else None, *args)
    return TaskComparison(task, pairing, overall, by_group, by_length, by_both, (ref_source, mod_source), tables)


def _with_lengths(pairs):
    """Pairs whose reference lacks a length take the modified run's (a run written before it was kept)."""
    return [(r if r.length is not None else dataclasses.replace(r, length=m.length), m) for r, m in pairs]


def compare_runs(reference: Run, modified: Run, benchmarks: Mapping, resamples: int = RESAMPLES, seed: int = SEED,
                 level: float = LEVEL) -> Comparison:
    """benchmarks: task -> its Benchmark (jaxeval.benchmarks.registry.run_tasks())."""
    shared, differences, only = check_comparable(reference, modified, benchmarks)
    tasks = [compare_task(task, reference, modified, benchmarks, resamples, seed, level) for task in shared]
    return Comparison(reference, modified, tasks, differences, only, resamples, seed, level)
