"""`jaxeval run` and `jaxeval validate`: tasks on one model, journaled, one results file.

The flow: resolve the run (config hash, run name) -> open its journal (resuming what is done)
-> run each task, its runner journaling every sample -> process 0 writes the results JSON and,
with --log_samples, the samples JSONL, atomically. SIGTERM (TPU preemption) flushes the journal
and exits with 143 (SIGINT: 130); rerunning the same command resumes.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time

from jaxeval.errors import ConfigError, JaxevalError

class Terminated(BaseException):
    """Raised in the main thread by the SIGTERM / SIGINT handler (BaseException: nothing swallows it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def signals_raise():
    """SIGTERM (TPU preemption) and SIGINT raise Terminated, never in the middle of a journal write."""
    from jaxeval.results.journal import raise_between_writes

    def handler(signum, frame):
        raise_between_writes(Terminated(signum))

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def check_run(args, names: list[str]) -> None:
    """Tasks known and numeric settings sane, before anything is loaded."""
    from jaxeval.benchmarks.registry import run_tasks

    available = run_tasks()
    unknown = [t for t in names if t not in available]
    if unknown or not names:
        raise JaxevalError(f"unknown task {unknown[0] if unknown else '(none)'!r}; available: {', '.join(available)}")
    for flag in ("limit", "batch_size", "prefill_chunk"):
        value = getattr(args, flag, None)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            source = f" (from {args.config})" if getattr(args, "config", None) else ""
            raise ConfigError(f"--{flag} must be a positive integer, got {value!r}{source}")


def _summarize(task: str, result: dict):
    from jaxeval.benchmarks.registry import task_hook

    hook = task_hook(task, "summarize")
    return hook(task, result) if hook else None


def split_between_hosts(setting: str, model) -> bool:
    """Whether each process computes only its share of the samples. Not when the model's mesh
    spans hosts: then every process must take part in every computation ("auto" sees that)."""
    if setting != "auto":
        return setting == "on"
    mesh = getattr(model, "mesh", None)
    devices = getattr(mesh, "devices", None)
    return devices is None or len({d.process_index for d in devices.flat}) <= 1


def open_journal(args, model, tasks: list[str], hash_: str, name: str):
    from jaxeval.results.journal import Journal
    from jaxeval.results.multihost import process_shard
    from jaxeval.results.runconfig import journal_path

    shard = process_shard()  # one journal file per process: nothing ever appends to a shared file
    identity = {"model_fingerprint": model.fingerprint, "config_hash": hash_, "tasks": tasks,
                "process": list(shard)}
    journal = Journal(journal_path(args, name, shard), identity,
                      shard=shard if split_between_hosts(args.host_split, model) else (0, 1))
    if journal.resumed:
        print(f"resuming from {journal.path}: {journal.resumed} samples already done", file=sys.stderr)
    return journal


def run_suite(args, tasks: list[str], load_model) -> int:
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.engine.mesh import is_writer
    from jaxeval.results.runconfig import config_hash, recorded_config, run_name
    from jaxeval.results.schema import add_task, empty_results, finish_results

    check_run(args, tasks)
    t0 = time.perf_counter()
    config = recorded_config(args, tasks)
    hash_ = config_hash(config)
    name = run_name(args.model, tasks, hash_)
    model = load_model(args)
    journal = open_journal(args, model, tasks, hash_, name)
    args.journal = journal
    runners = run_tasks()
    results, samples, task_seconds = empty_results(), {}, {}
    try:
        with signals_raise():
            for task in tasks:
                started = time.perf_counter()
                result, table = runners[task](model, args)
                journal.flush()
                task_seconds[task] = round(time.perf_counter() - started, 3)
                samples[task] = result.pop("sample_log", None)
                add_task(results, task, result, _summarize(task, result))
                print(f"\n{task}\n{table}")
    except Terminated as stop:
        journal.close()
        print(f"jaxeval: terminated ({signal.Signals(stop.signum).name}); journal flushed to {journal.path}; "
              f"rerun the same command to resume", file=sys.stderr)
        return 128 + stop.signum  # 143 for SIGTERM, what schedulers expect of a terminated job
    finally:
        args.journal = None
        journal.close()
    timing = {"wall_time_s": round(time.perf_counter() - t0, 3), "tasks_s": task_seconds,
              "resumed_records": journal.resumed}
    finish_results(results, config=config, config_hash=hash_, model=model, run_name=name, journal=journal,
                   timing=timing)
    if is_writer():
        write_outputs(args, name, results, samples)
    return 0


def write_outputs(args, name: str, results: dict, samples: dict) -> None:
    """The results JSON and (--log_samples) one samples JSONL per task, each written atomically."""
    from jaxeval.results.files import write_json_atomic
    from jaxeval.results.runconfig import output_folder, results_path
    from jaxeval.results.schema import dumps_samples
    from jaxeval.results.storage import join, write_text_atomic

    print(f"wrote {write_json_atomic(results_path(args, name), results)}")
    if not args.log_samples:
        return
    for task, task_samples in samples.items():
        if task_samples is None:
            print(f"{task}: its runner returns no per-sample log", file=sys.stderr)
            continue
        path = join(output_folder(args), f"{name}.samples_{task}.jsonl")
        print(f"wrote {write_text_atomic(path, dumps_samples(task, task_samples))}")


def validate_suite(args, tasks: list[str]) -> int:
    """Check what a run needs before it starts: tasks, model config and tokenizer, every record."""
    from jaxeval.api import resolve_model_path
    from jaxeval.benchmarks.registry import task_hook
    from jaxeval.models.checkpoint import TOKENIZER_FILES
    from jaxeval.models.config import load_hf_config

    check_run(args, tasks)
    folder = resolve_model_path(args.model)  # a URL is copied to the local cache first
    config = load_hf_config(folder)
    print(f"model {args.model}: config.json valid ({config.model_type})")
    if not any((folder / name).is_file() for name in TOKENIZER_FILES[:2] + ("tokenizer.model", "vocab.json")):
        raise ConfigError(f"{args.model}: no tokenizer (tokenizer.json, tokenizer.model or vocab.json); "
                          f"the benchmarks need one")
    print(f"model {args.model}: tokenizer present")
    for task in tasks:
        hook = task_hook(task, "validate")
        if hook is None:
            print(f"{task}: no validate() hook; its data is checked when it runs")
            continue
        for line in hook(task, args):
            print(line)
    print("valid")
    return 0
