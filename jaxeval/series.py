"""`jaxeval run --model RUN/checkpoints --steps ...`: a score for every committed training step.

Each selected step is one ordinary run (jaxeval/suite.py) of the step's folder, with its own journal
and results file under OUTPUT/<series name>/step-<N>.json; the series file OUTPUT/<series name>.series.json
lists the finished steps with their scores, so a rerun skips them (and a step interrupted half way
resumes from its journal). With --watch, new steps are picked up as they are committed (jaxeval.weights.
steps: a step Orbax is still writing is never read) until none has come for --watch_max_wait seconds or
SIGTERM stops it (exit 143). After each step the report (jaxeval.report.series) is redrawn and,
with --tensorboard DIR, the step's scores are written there as scalars at their step.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from jaxeval.errors import ConfigError
from jaxeval.options.flags import RunFlags
from jaxeval.options.run import RunOptions
from jaxeval.interrupt import Terminated, checkpoint, message
from jaxeval.weights.steps import (check_run_folder, committed_steps, parse_steps, pending_steps, select_steps,
                                   step_model)

SERIES_FORMAT, SERIES_VERSION = "jaxeval-series", 1
POLL_LIMITS = (0.1, 600.0)  # --watch_poll seconds, bounded both ways


def check_series_flags(options: RunOptions) -> tuple[str, object]:
    """--steps and the flags that go with it, checked before anything loads."""
    kind, argument = parse_steps(options.steps)
    if options.out:
        raise ConfigError("--out names one results file; with --steps each step writes its own under --output_path")
    if not POLL_LIMITS[0] <= options.watch_poll <= POLL_LIMITS[1]:
        raise ConfigError(f"--watch_poll must be between {POLL_LIMITS[0]:g} and {POLL_LIMITS[1]:g} seconds, "
                          f"got {options.watch_poll:g}")
    if options.watch_max_wait <= 0:
        raise ConfigError(f"--watch_max_wait must be a positive number of seconds, got {options.watch_max_wait:g}")
    return kind, argument


def run_series(flags: RunFlags, tasks: list[str], load_model) -> int:
    options = flags.run
    from jaxeval.engine.distributed import is_writer
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.run.config import config_hash, not_hashed_keys, recorded_config, run_name
    from jaxeval.report.series import write_series_report
    from jaxeval.io.fs import join
    from jaxeval.suite import check_run, run_suite

    kind, argument = check_series_flags(options)
    run = check_run_folder(flags.model.model)
    check_run(flags, tasks)
    writer = tensorboard_writer(options.tensorboard) if options.tensorboard and is_writer() else None
    config = recorded_config(flags, tasks, run_tasks())
    hash_ = config_hash(config, not_hashed_keys(flags, tasks, run_tasks()))
    stem = run_name(str(run), tasks, hash_)
    series_path = join(options.output_path, f"{stem}.series.json")
    series = load_series(series_path, run, tasks, hash_)
    last_news = time.monotonic()
    if options.watch:
        print(f"watching {run} for committed steps (a look every {options.watch_poll:g} s; stopping after "
              f"{options.watch_max_wait:g} s without a new one, or on SIGTERM)", file=sys.stderr, flush=True)
    try:
        while True:
            available = committed_steps(run)
            todo = [s for s in select_steps(list(available), kind, argument) if str(s) not in series["steps"]]
            if kind == "latest" and series["steps"] and available and max(available) <= max(map(int, series["steps"])):
                todo = []
            for step in todo:
                checkpoint()
                print(f"step {step}: evaluating {step_model(available[step])}", file=sys.stderr)
                step_flags = flags.with_model(model=str(step_model(available[step])))
                step_flags = step_flags.with_run(out=join(options.output_path, stem, f"step-{step}.json"))
                code = run_suite(step_flags, tasks, load_model)
                if code != 0:
                    return code
                if is_writer():
                    record_step(series, step, step_flags.run.out)
                    write_series(series_path, series)
                    write_series_report(series, join(options.output_path, f"{stem}.series"))
                    if writer is not None:
                        write_scalars(writer, step, series["steps"][str(step)])
                last_news = time.monotonic()
            if not options.watch:
                return _finish(series, kind, argument, available, run, series_path)
            if kind == "list" and all(str(s) in series["steps"] for s in argument):
                print(f"every listed step is scored; series in {series_path}", file=sys.stderr)
                return 0
            waited = time.monotonic() - last_news
            if waited >= options.watch_max_wait:
                print(f"no new committed step in {options.watch_max_wait:g} s; stopping (series in {series_path})",
                      file=sys.stderr)
                return 0
            _sleep(min(options.watch_poll, options.watch_max_wait - waited))
    except Terminated as stop:
        print(message(stop.signum, f" while watching {run}; scored steps are in {series_path}; rerun the same "
                                   "command to go on"), file=sys.stderr)
        return stop.exit_code
    finally:
        if writer is not None:
            writer.close()


def _finish(series: dict, kind: str, argument, available: dict, run: Path, series_path: str) -> int:
    pending = pending_steps(run)
    note = f" ({len(pending)} still being written: {', '.join(pending)})" if pending else ""
    if not available:
        raise ConfigError(f"--model {run}: no committed checkpoint step{note}; --watch waits for one")
    if kind == "list":
        missing = [s for s in argument if str(s) not in series["steps"]]
        if missing:
            raise ConfigError(f"--steps: step {missing[0]} is not a committed step of {run} "
                              f"(committed: {', '.join(map(str, available))}){note}")
    if not series["steps"]:
        raise ConfigError(f"--steps {kind}{':' + str(argument) if kind == 'every' else ''}: no committed step of "
                          f"{run} matches (committed: {', '.join(map(str, available))})")
    print(f"series of {len(series['steps'])} step(s) in {series_path}{note}", file=sys.stderr)
    return 0


def _sleep(seconds: float) -> None:
    """Sleep, reaching a safe point (SIGTERM) at least every 0.2 s."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        checkpoint()
        time.sleep(min(0.2, left))
    checkpoint()


def load_series(path: str, run: Path, tasks: list[str], hash_: str) -> dict:
    """The series file of this run and settings (a new one when absent); its steps whose results file is
    gone are dropped, so they are scored again."""
    from jaxeval.io.inputs import read_json

    fresh = {"format": SERIES_FORMAT, "version": SERIES_VERSION, "model": str(run), "tasks": list(tasks),
             "config_hash": hash_, "steps": {}}
    if not exists(path):
        return fresh
    series = read_json(path, ConfigError, "series file")
    if not isinstance(series, dict) or series.get("format") != SERIES_FORMAT or not isinstance(series.get("steps"),
                                                                                                dict):
        raise ConfigError(f"{path}: not a jaxeval series file (expected format {SERIES_FORMAT!r} with a 'steps' "
                          "object); move it away to start the series again")
    series["steps"] = {s: entry for s, entry in series["steps"].items()
                       if isinstance(entry, dict) and exists(str(entry.get("results", "")))}
    return series


def exists(path: str) -> bool:
    from jaxeval.io.fs import open_fs

    fs, inside = open_fs(path)
    return bool(path) and fs.exists(inside)


def record_step(series: dict, step: int, results_file: str) -> None:
    """The step's scores (results, headline, lengths) copied from its results file into the series."""
    from jaxeval.io.inputs import read_json

    results = read_json(results_file, ConfigError, "results file")
    series["steps"][str(step)] = {"results": results_file, "headline": results.get("headline", {}),
                                  "scores": results.get("results", {}), "lengths": results.get("lengths", {})}
    series["steps"] = dict(sorted(series["steps"].items(), key=lambda item: int(item[0])))


def write_series(path: str, series: dict) -> None:
    from jaxeval.io.json_files import write_json_atomic

    write_json_atomic(path, series)


def tensorboard_writer(folder: str):
    """tensorboardX's SummaryWriter (the optional extra `tensorboard`), or one clear line without it."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ConfigError("--tensorboard needs tensorboardX (pip install 'jaxeval[tensorboard]')") from None
    Path(folder).mkdir(parents=True, exist_ok=True)
    return SummaryWriter(logdir=str(folder))


def write_scalars(writer, step: int, entry: dict) -> None:
    """One scalar per headline row (headline/<task>/<row>) and per numeric metric of every leaf task."""
    for task, rows in entry["headline"].items():
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and isinstance(row.get("value"), (int, float)):
                writer.add_scalar(f"headline/{task}/{row.get('row', row.get('metric'))}", float(row["value"]), step)
    for leaf, metrics in entry["scores"].items():
        for metric, value in (metrics.items() if isinstance(metrics, dict) else ()):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not metric.endswith("_stderr"):
                writer.add_scalar(f"{leaf}/{metric}", float(value), step)
    writer.flush()
