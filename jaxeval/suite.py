"""`jaxeval run` and `jaxeval validate`: tasks on one model, journaled, one results file.

The flow: check every flag and the output path -> take the run's lock (one run per output path;
leftover temp files of its interrupted writes removed) -> load the model -> open its journal
(resuming what is done; the run name covers settings and model identity) -> run each task, its
runner journaling every sample -> process 0 writes the results JSON and, with --log_samples,
the samples JSONL, atomically. SIGTERM (TPU preemption) or SIGINT at any moment flushes the
journal and exits with 143 / 130 (jaxeval/interrupt.py); rerunning the same command resumes.
"""

from __future__ import annotations

import sys
import time

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.errors import ConfigError, JaxevalError
from jaxeval.interrupt import Terminated, checkpoint, message, unwatch_journal, watch_journal
from jaxeval.judges.chat import has_chat_template
from jaxeval.options.flags import RunFlags
from jaxeval.options.run import RunOptions
from jaxeval.tasks import each_task, run_context


def check_run(flags: RunFlags, names: list[str], create_output: bool = True) -> None:
    """Tasks known, every flag sane (the benchmarks' `check` hooks), the output path and the
    tasks' own output files writable, before anything is loaded; `validate` checks the same
    (create_output False: nothing made)."""
    from jaxeval.benchmarks.registry import run_tasks
    from jaxeval.io.outputs import check_output_file, check_output_folder
    from jaxeval.judges.options import check_judge_arguments
    from jaxeval.plan.options import check_plan_arguments
    from jaxeval.run.config import output_folder

    available = run_tasks()
    unknown = [t for t in names if t not in available]
    if unknown or not names:
        raise JaxevalError(f"unknown task {unknown[0] if unknown else '(none)'!r}; available: {', '.join(available)}")
    from jaxeval.benchmarks.base import check_limit
    from jaxeval.engine.distributed import distributed_settings

    distributed_settings()  # the multi-host variables agree, before anything joins or loads
    from jaxeval.model_checks import check_run_flags

    check_run_flags(flags, names)  # --seed, --quant_group, --kv_cache against the tasks

    run = flags.run
    source = f" (from {run.config})" if run.config else ""
    try:
        check_limit(run.limit)
    except ConfigError as e:
        raise ConfigError(f"{e}{source}") from None
    from jaxeval.plan.batch import auto_cap

    auto = auto_cap(run.batch_size) is not None  # auto / auto:N: chosen when the run starts
    for flag, value in (("batch_size", run.batch_size), ("prefill_chunk", flags.model.prefill_chunk))[auto:]:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ConfigError(f"--{flag} must be a positive integer, got {value!r}{source}")
    check_judge_arguments(flags.extra)
    from jaxeval.run.config import parse_gen_kwargs

    parse_gen_kwargs(run.gen_kwargs)  # an unknown key or bad value: one line, before loading
    from jaxeval.models.kv_policy import policy_of_flags

    policy_of_flags(flags.model)  # --kv_cache and its settings, before anything loads
    check_plan_arguments(flags.extra)
    for task, benchmark, settings in each_task(flags, names):  # each benchmark's own settings, as its run checks them
        benchmark.check(task, settings, run_context(flags, task))
        for path in benchmark.output_files(task, settings):
            check_output_file(path, what=f"{task}'s output file", create=create_output)
    if run.out:
        check_output_file(run.out, create=create_output, inputs=(flags.flag("reference"),))
    check_output_folder(output_folder(run), what="--output_path" if not run.out else "--out's folder",
                        create=create_output)
    from jaxeval.report.run_reference import check_reference

    check_reference(flags, names, run_tasks())  # --reference: readable and comparable, before anything loads


def _check_chat_template(flags: RunFlags, tasks: list[str], has_template: bool) -> None:
    for task, benchmark, settings in each_task(flags, tasks):
        benchmark.check_chat_template(task, settings, has_template, str(flags.model.model))


def split_between_hosts(setting: str, model) -> bool:
    """Whether each process computes only its share of the samples. Not when the model's mesh
    spans hosts: then every process must take part in every computation ("auto" sees that)."""
    if setting != "auto":
        return setting == "on"
    mesh = getattr(model, "mesh", None)
    devices = getattr(mesh, "devices", None)
    return devices is None or len({d.process_index for d in devices.flat}) <= 1


def open_journal(flags: RunFlags, model, tasks: list[str], hash_: str, name: str, shard: tuple[int, int]):
    from jaxeval.fingerprint import identity_parts
    from jaxeval.run.journal import Journal
    from jaxeval.run.config import journal_path

    # one journal file per process: nothing ever appends to a shared file
    identity = {"model": identity_parts(model), "config_hash": hash_, "tasks": tasks, "process": list(shard)}
    _continue_old_journal(flags, model, tasks, hash_, journal_path(flags.run, name, shard), identity, shard)
    journal = Journal(journal_path(flags.run, name, shard), identity, recover=flags.run.journal_mode == "recover",
                      shard=shard if split_between_hosts(flags.run.host_split, model) else (0, 1))
    for note in journal.notes:
        print(note, file=sys.stderr)
    if journal.resumed:
        print(f"resuming from {journal.path}: {journal.resumed} samples already done", file=sys.stderr)
    return journal


def _continue_old_journal(flags: RunFlags, model, tasks: list[str], hash_: str, path: str, identity: dict,
                          shard: tuple[int, int]) -> None:
    """A journal this run left under the previous run-name layout continues under the new name."""
    from jaxeval.run.legacy_journal import continue_old_journal, old_config_hash
    from jaxeval.run.config import journal_path, run_name

    old_hash = old_config_hash(flags.values(), tasks)
    if old_hash is None or old_hash == hash_:
        return
    old_path = journal_path(flags.run, run_name(flags.model.model, tasks, old_hash, model.fingerprint), shard)
    note = continue_old_journal(old_path, dict(identity, config_hash=old_hash), path, identity)
    if note:
        print(note, file=sys.stderr)


def _lock_run(run: RunOptions, stem: str, shard: tuple[int, int]):
    """The run's lock (RunLockedError when another process has it); the temp files its
    interrupted writes left behind removed (process 0 writes results and samples, each process
    its own journal)."""
    from pathlib import Path

    from jaxeval.run.lock import RunLock, remove_temp_files
    from jaxeval.run.config import output_folder, shard_suffix

    folder, suffix = output_folder(run), shard_suffix(shard)
    lock = RunLock(folder, stem + suffix).acquire()
    patterns = [(folder, f".{stem}*{suffix}.journal.jsonl.*.tmp")]
    if shard[0] == 0:
        patterns += [(folder, f".{stem}*.json.*.tmp"), (folder, f".{stem}*.samples_*.jsonl.*.tmp")]
        if run.out:
            patterns.append((str(Path(run.out).parent), f".{Path(run.out).name}.*.tmp"))
    removed = remove_temp_files(patterns)
    for note in lock.notes + ([f"removed {removed} temp file(s) of interrupted writes"] if removed else []):
        print(note, file=sys.stderr)
    return lock


def run_suite(flags: RunFlags, tasks: list[str], load_model) -> int:
    """load_model: the run's flags -> the loaded Model, its model flags (and --gen_kwargs' budget) checked
    against its config first (cli._load)."""
    from jaxeval.engine.distributed import initialize_distributed
    from jaxeval.run.multihost import process_shard
    from jaxeval.run.config import config_hash, not_hashed_keys, recorded_config, run_name

    check_run(flags, tasks)
    t0 = time.perf_counter()
    from jaxeval.plan.batch import resolve_batch_size

    config = recorded_config(flags, tasks, run_tasks())  # batch_size as asked (auto); the choice beside it
    hashed_out = not_hashed_keys(flags, tasks, run_tasks())
    flags, auto_batch = resolve_batch_size(flags, tasks)
    if auto_batch is not None:
        config["batch_size_auto"] = auto_batch
    hash_ = config_hash(config, hashed_out)
    stem = run_name(flags.model.model, tasks, hash_)
    initialize_distributed()  # multi-host: the process index names this process's lock and journal
    shard = process_shard()
    lock = _lock_run(flags.run, stem, shard)
    journal = None
    try:
        checkpoint()
        calibrate_on_model = flags.flag("calibrate", "auto") == "model"
        plan = None if calibrate_on_model else plan_estimate(flags, tasks)  # config and tokenizer only
        model = load_model(flags)
        plan = plan_estimate(flags, tasks, model) if calibrate_on_model else plan
        checkpoint()
        from jaxeval.generation import check_chat_template

        check_chat_template(model.tokenizer)
        _check_chat_template(flags, tasks, has_chat_template(model.tokenizer))
        name = run_name(flags.model.model, tasks, hash_, model.fingerprint)
        _check_results_path(flags, name)
        journal = open_journal(flags, model, tasks, hash_, name, shard)
        watch_journal(journal)
        return _run_tasks(flags, tasks, model, journal, config, hash_, name, t0, plan)
    except Terminated as stop:
        where = (f"; journal flushed to {journal.path}; rerun the same command to resume" if journal is not None
                 else " before its first sample")
        if journal is not None:
            journal.close()
        print(message(stop.signum, where), file=sys.stderr)
        return stop.exit_code
    finally:
        if journal is not None:
            unwatch_journal(journal)
            journal.close()
        lock.release()


def _check_results_path(flags: RunFlags, name: str) -> None:
    """The results file this run will write is no journal and not its --reference (the run's
    name, and so the default path, is known only once the model is loaded)."""
    from jaxeval.io.outputs import check_output_file
    from jaxeval.run.config import results_path

    check_output_file(results_path(flags.run, name), what="the results file", inputs=(flags.flag("reference"),))


def plan_estimate(flags: RunFlags, tasks: list[str], model=None) -> dict:
    """`jaxeval plan`'s numbers for this run (jaxeval/plan/), or the reason there are none."""
    from jaxeval.plan.command import build_plan, estimated

    from jaxeval.model_checks import check_model_flags

    started = time.perf_counter()
    try:
        if model is None:  # flags the config refuses are the load's one line to say, not the plan's traceback
            check_model_flags(flags.model, flags.run.gen_kwargs, devices=False)
        plan = {"estimated": estimated(build_plan(flags, tasks, model))}
    except JaxevalError as e:
        plan = {"estimated": None, "error": str(e)}
    return plan | {"seconds": round(time.perf_counter() - started, 3)}


def compile_counts() -> dict:
    """Executables each engine entry point compiled in this process (jaxeval.engine.compiles)."""
    from jaxeval.engine.compiles import compile_counts as counts

    return counts()


def measured_memory() -> dict:
    """Peak host RSS of this process and the first device's peak bytes in use (None on CPU)."""
    import resource

    import jax

    device = jax.local_devices()[0]  # memory_stats() is refused for another process's device
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return {"host_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "device_peak_bytes": int(stats["peak_bytes_in_use"]) if stats and "peak_bytes_in_use" in stats else None}


def _with_measured(plan: dict, results: dict) -> dict:
    """plan.estimated next to what the run measured, and their ratios (estimated / measured)."""
    timing = results["timing"]
    measured = {"tokens_read": timing["tokens_read"], "wall_time_s": timing["wall_time_s"],
                "device_peak_bytes": timing["memory"]["device_peak_bytes"],
                "host_peak_rss_bytes": timing["memory"]["host_peak_rss_bytes"]}
    estimate = plan.get("estimated") or {}
    pairs = {"tokens_read": "tokens_read", "wall_time_s": "wall_time_s", "device_bytes_per_chip": "device_peak_bytes",
             "host_bytes": "host_peak_rss_bytes"}
    ratio = {key: (estimate[key] / measured[other] if estimate.get(key) is not None and measured[other] else None)
             for key, other in pairs.items()}
    return {**plan, "measured": measured, "ratio_estimated_to_measured": ratio}


def _run_tasks(flags: RunFlags, tasks, model, journal, config: dict, hash_: str, name: str, t0: float,
               plan: dict | None = None) -> int:
    from jaxeval.engine.distributed import is_writer
    from jaxeval.judges.options import JUDGE_FAILURE_EXIT, judge_failure

    results, samples = task_results(flags, tasks, model, journal, config, hash_, name, t0)
    if plan is not None:
        results["plan"] = _with_measured(plan, results)
    from jaxeval.embedded import EMBEDDED_MODEL

    if str(model.path).rstrip("/") == str(EMBEDDED_MODEL):  # beside the tables, never before an error line
        print(f"NOTE: the model is jaxeval's embedded test model ({EMBEDDED_MODEL.name}, a few MB): its scores show "
              "that the pipeline runs, not what an LLM scores; give --model PATH_OR_HUB_ID")
    if is_writer():
        write_outputs(flags.run, name, results, samples)
        from jaxeval.report.run_reference import report_against_reference
        from jaxeval.run.config import results_path

        report_against_reference(flags, name, results_path(flags.run, name), run_tasks())
    failure = judge_failure(results["details"], flags.flag("judge_max_failures", 0.0))
    if failure:
        print(f"jaxeval: error: {failure}", file=sys.stderr)
        return JUDGE_FAILURE_EXIT
    return 0


def task_results(flags: RunFlags, tasks, model, journal, config: dict, hash_: str, name: str, t0: float,
                 show_tables: bool = True) -> tuple[dict, dict]:
    """Run each task on the model -> (the results dict a run writes, {task: its --log_samples rows});
    shared by `jaxeval run` and the in-process jaxeval.evaluate (jaxeval/in_process.py)."""
    from jaxeval.generation import note_overriding, overriding
    from jaxeval.run.config import parse_gen_kwargs
    from jaxeval.run.schema import add_task, empty_results, finish_results

    results, samples, task_seconds = empty_results(), {}, {}
    gen_kwargs = parse_gen_kwargs(flags.run.gen_kwargs)
    for task, benchmark, settings in each_task(flags, tasks):
        checkpoint()
        started = time.perf_counter()
        with overriding(gen_kwargs) as overridden:  # --gen_kwargs in every generation of the task
            result, table = benchmark.run(run_context(flags, task, model, journal), settings)
        journal.flush()
        task_seconds[task] = round(time.perf_counter() - started, 3)
        samples[task] = result.pop("sample_log", None)
        add_task(results, task, result, note_overriding(benchmark.summarize(task, result), overridden))
        if show_tables:
            print(f"\n{task}\n{table}")
        _record_data_source(results, task, benchmark, settings)
    journal.close()
    checkpoint()
    timing = {"wall_time_s": round(time.perf_counter() - t0, 3), "tasks_s": task_seconds,
              "resumed_records": journal.resumed, "memory": measured_memory(), "compiles": compile_counts()}
    finish_results(results, config=config, config_hash=hash_, model=model, run_name=name, journal=journal,
                   timing=timing)
    return results, samples


def _record_data_source(results: dict, task: str, benchmark, settings) -> None:
    """results["data_source"][task]: where the items came from and how many were scored; on the
    shipped stand-in sample, a line on the terminal saying so (its scores are no benchmark's)."""
    source = benchmark.data_source(settings)
    if not source:
        return
    n_samples = results["n-samples"]
    # the task's own total where it reports one (MRCR: its leaves' originals are None), else its leaves'
    counts = [n_samples[task]] if task in n_samples else [n for key, n in n_samples.items()
                                                           if key.startswith(f"{task}/")]

    def total(field):
        values = [n.get(field) for n in counts]
        return None if any(v is None for v in values) else sum(values)

    source["items"] = {"original": total("original"), "effective": total("effective")} if counts else None
    results.setdefault("data_source", {})[task] = source
    if source["shipped_sample"]:
        count = source["items"]["effective"] if source["items"] else None
        held = f"{count} item{'' if count == 1 else 's'}" if count is not None else "a few items"
        print(f"NOTE: {task} ran on the stand-in sample shipped with jaxeval ({held}), not the benchmark's data: "
              f"these numbers are not {task} scores. For the real set: {source.get('real_data', 'its --*_data flag')}")


def write_outputs(run: RunOptions, name: str, results: dict, samples: dict) -> None:
    """The results JSON and (--log_samples) one samples JSONL per task, each written atomically."""
    from jaxeval.io.json_files import write_json_atomic
    from jaxeval.run.config import output_folder, results_path
    from jaxeval.run.schema import dumps_samples
    from jaxeval.io.fs import join, write_text_atomic

    print(f"wrote {write_json_atomic(results_path(run, name), results)}")
    if not (run.log_samples or run.log_samples_prompts):
        return
    for task, task_samples in samples.items():
        if task_samples is None:
            print(f"{task}: its runner returns no per-sample log", file=sys.stderr)
            continue
        path = join(output_folder(run), f"{name}.samples_{task}.jsonl")
        print(f"wrote {write_text_atomic(path, dumps_samples(task, task_samples))}")


def validate_suite(flags: RunFlags, tasks: list[str]) -> int:
    """Check what a run needs before it starts: every flag, the output path, the model's config
    and tokenizer (loaded, its chat template as the tasks need it), every record."""
    from jaxeval.weights.loader import load_tokenizer_from, resolve_model_path
    from jaxeval.weights.maxtext import maxtext_model_info
    from jaxeval.io.inputs import check_model_folder
    from jaxeval.model_checks import check_model_flags

    check_run(flags, tasks, create_output=False)
    model, gen_kwargs = flags.model, flags.run.gen_kwargs
    maxtext = maxtext_model_info(model)  # a MaxText checkpoint's config
    if maxtext:
        config, tokenizer = maxtext
        check_model_flags(model, gen_kwargs)
        print(f"model {model.model}: MaxText checkpoint and config valid ({config.model_type}), and the run's model "
              "flags with it")
    else:
        folder = resolve_model_path(model.model)  # a URL is copied to the local cache first
        check_model_folder(folder)
        config = check_model_flags(model, gen_kwargs)  # the run's own checks: overrides, quantization, mesh, KV, budget
        print(f"model {model.model}: config.json valid ({config.model_type}), and the run's model flags with it")
        tokenizer = load_tokenizer_from(folder)
    if tokenizer is None:
        raise ConfigError(f"{model.model}: no tokenizer (tokenizer.json, tokenizer.model or vocab.json); "
                          f"the benchmarks need one")
    print(f"model {model.model}: tokenizer present and loads")
    from jaxeval.generation import check_chat_template

    check_chat_template(tokenizer)
    has_template = has_chat_template(tokenizer)
    _check_chat_template(flags, tasks, has_template)
    print(f"model {model.model}: {'chat template present' if has_template else 'no chat template (none needed)'}")
    for task, benchmark, settings in each_task(flags, tasks):
        for line in benchmark.validate(task, settings):
            print(line)
    print("valid")
    return 0
