"""`jaxeval compile TARGET --model M ...`: every program of a run compiled for a named accelerator
from abstract shapes (no weights read, no chip needed): memory per chip, FLOPs and a time estimate
from the compiler, the largest batch and a mesh that fit (by compiling, --batch_size auto / --mesh auto).

Exit 0 when every program fits, 2 (one line: the program, its bytes, the chip's, the nearest batch
that fits) when one does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from jaxeval.aot import targets as tg
from jaxeval.errors import ConfigError

from jaxeval.plan.batch import AUTO_CAP  # the most rows --batch_size auto tries (auto:N: N)


def parse_lengths(text: str) -> list[int]:
    """"32k,128k,4096" -> [32768, 131072, 4096]."""
    out = []
    for part in (p.strip().lower() for p in str(text).split(",") if p.strip()):
        scale = 1024 if part.endswith("k") else 1
        try:
            value = int(part[:-1] if part.endswith("k") else part) * scale
        except ValueError:
            value = 0
        if value < 2:
            raise ConfigError(f"--lengths {text!r}: {part!r} is not a token count (e.g. 32k or 4096)")
        out.append(value)
    if not out:
        raise ConfigError("--lengths: give at least one length, e.g. 32k,128k")
    return out


# jaxeval compile's model flags are ModelOptions' (jaxeval.options.model), with these overrides
COMPILE_FLAGS = ("model", "dtype", "attention", "prefill_chunk", "kv_cache", "mesh")
COMPILE_DEFAULTS = {"dtype": "bfloat16", "attention": None}
COMPILE_CHOICES = {"dtype": ("float32", "bfloat16"), "kv_cache": ("exact", "int8", "fp8")}


def add_arguments(p) -> None:
    from jaxeval.options.model import ModelOptions
    from jaxeval.options.settings import add_flags

    p.add_argument("target", help=f"accelerator to compile for: {', '.join(tg.TARGETS)}")
    # the run's own model flags (ModelOptions), with what a compile does differently: --model may name a
    # shape, dtype bfloat16 (what a run has on an accelerator), the attention default follows the target,
    # only the KV caches laid out ahead of time, and --mesh auto on several chips
    add_flags(p, ModelOptions, names=COMPILE_FLAGS, defaults=COMPILE_DEFAULTS, choices=COMPILE_CHOICES, helps=dict(
        model="model folder (config.json is enough) or a named shape: llama-3.1-8b, llama-3.1-70b, qwen3-30b-a3b, "
              "qwen3.5-hybrid-4b, llama-8b, tiny-llama",
        attention="default: splash on TPU targets, chunked on CUDA ones",
        mesh="device mesh over the target's chips (e.g. tensor=8), auto (the first candidate that compiles and "
             "fits) or none (one chip); default: auto on several chips"))
    next(a for a in p._actions if a.dest == "model").required = True
    p.add_argument("--lengths", default=None, help="input tokens of the reads compiled, e.g. 32k,128k (default 32k)")
    p.add_argument("--tasks", default=None, help="instead of --lengths: the programs a run of these tasks executes "
                   "(`jaxeval ls`; their length buckets, LM-head rows and generation batches, counted as `jaxeval plan` "
                   "counts them, with the tasks' own --<benchmark>_<setting> flags)")
    p.add_argument("--batch_size", default="1", help="sequences read (and prompts decoded) together, or auto: "
                   "the largest power of two up to 64 (auto:N: up to N) whose programs fit, found by compiling")
    p.add_argument("--new_tokens", type=int, default=0, help="also compile generation: the prompt's prefill and "
                   "the decode step with a cache for the length plus this many tokens")
    p.add_argument("--programs", choices=("all", "read", "generate"), default="all",
                   help="which of the run's programs to compile: all (default), the read's only, or the "
                        "generation's only (with --new_tokens: the prompt's prefill and the decode step)")
    p.add_argument("--read_positions", type=int, default=8, help="LM-head rows per sequence (8)")
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--hlo_dir", default=None, help="write each compiled program's optimized HLO text here")
    _task_arguments(p)


def _task_arguments(p) -> None:
    """The run flags --tasks counts with: --limit, --seed, --gen_kwargs and every benchmark's settings."""
    from jaxeval.benchmarks.base import parse_limit
    from jaxeval.benchmarks import settings as settings_fields
    from jaxeval.benchmarks.registry import benchmarks

    group = p.add_argument_group("--tasks: the run's task flags (as jaxeval run)")
    group.add_argument("--limit", type=parse_limit, default=None, help="first N items per config and length")
    group.add_argument("--seed", type=int, default=0, help="seed of the tasks' sampled data")
    group.add_argument("--gen_kwargs", default=None, help="generation settings over each benchmark's own")
    for b in benchmarks():  # their flags, without the deprecated aliases (one of them is --lengths)
        settings_fields.add_arguments(p, b.name, b.Settings, {}, b.name)


def run(args) -> int:
    tg.prepare_environment()
    report = build_report(args)
    _print_table(report)
    if args.out:
        from jaxeval.io.fs import write_text_atomic

        print(f"wrote {write_text_atomic(args.out, json.dumps(report, indent=2) + chr(10))}")
    if not report["fits"]:
        print(report["verdict"], file=sys.stderr)
        return 2
    return 0


def report_for(values: dict) -> dict:
    """build_report for flags given as {dest: value} (`jaxeval run --target`: jaxeval.aot.run_target)."""
    return build_report(argparse.Namespace(**values))


def build_report(args) -> dict:
    """Compile the run args describe for args.target -> the report (fits, verdict, programs, the batch
    and mesh chosen); progress on stderr."""
    t = tg.target(args.target)
    if args.tasks and args.lengths:
        raise ConfigError("compile: give --lengths or --tasks, not both")
    tasks = [task.strip() for task in (args.tasks or "").split(",") if task.strip()]
    if _which(args) == "generate" and not args.new_tokens and not tasks:
        raise ConfigError("compile: --programs generate needs --new_tokens N (the generation to compile)")
    lengths = [] if tasks else parse_lengths(args.lengths or "32k")
    _check_tasks(tasks, args)
    tg.check_installed(t)
    config = _config(args)
    backend = args.attention or ("splash" if t.platform == "tpu" else "chunked")
    from jaxeval.models.attention import check_attention

    check_attention(backend, config, args.dtype, platform="tpu" if t.platform == "tpu" else "gpu")
    devices = tg.devices(t.name)
    meshes = _mesh_candidates(args.mesh, t, config)
    auto_batch = _auto_cap(args.batch_size)  # None, or the most rows --batch_size auto[:N] tries
    rows = 1 if auto_batch else _positive(args.batch_size, "--batch_size")
    workloads_at = _workloads(args, config, tasks, lengths)
    workloads_at(rows)  # the tasks counted before any compile: their bad input is one line, now
    report, refused = None, []
    for spec in meshes:
        try:
            report = _report(args, t, config, devices, spec, workloads_at, backend, rows, auto_batch,
                             last=spec is meshes[-1])
        except ConfigError as e:  # a candidate the model cannot be split over (or no batch fits on it)
            if len(meshes) == 1:
                raise
            refused.append(f"{spec}: {e}")
            continue
        if report["fits"]:
            break
    if report is None:
        raise ConfigError(f"compile: no candidate mesh works on {t.name} ({'; '.join(refused)})")
    report["meshes_refused"] = refused
    return report


def _workloads(args, config, tasks, lengths):
    """rows -> the workloads of the run at that batch size (from --tasks, counted once per batch size)."""
    from jaxeval.aot import workloads

    if not tasks:
        return lambda rows: (workloads.from_lengths(lengths, rows, args.read_positions, args.new_tokens), None)
    counted = {}

    def at(rows):
        if rows not in counted:
            counted[rows] = workloads.from_tasks(vars(args), tasks, config, rows)
        return counted[rows]

    return at


def _auto_cap(text) -> int | None:
    from jaxeval.options.run import parse_batch_size
    from jaxeval.plan.batch import auto_cap

    try:
        return auto_cap(parse_batch_size(text))
    except argparse.ArgumentTypeError as e:
        raise ConfigError(f"--batch_size: {e}") from None


def _check_tasks(tasks, args) -> None:
    if not tasks:
        return
    if args.new_tokens:
        raise ConfigError("compile: --new_tokens goes with --lengths; with --tasks the tasks' own budgets count")
    if _which(args) != "all":
        raise ConfigError("compile: --programs goes with --lengths; with --tasks every program of the run counts")
    from jaxeval.benchmarks.registry import run_tasks

    unknown = [task for task in tasks if task not in run_tasks()]
    if unknown:
        raise ConfigError(f"compile: --tasks: unknown task(s) {', '.join(unknown)} (known: {', '.join(run_tasks())})")


def _positive(text, flag) -> int:
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = 0
    if value < 1:
        raise ConfigError(f"{flag} {text!r}: expected a positive integer or auto")
    return value


def _config(args):
    from pathlib import Path

    from jaxeval.aot.shapes import named_config
    from jaxeval.models.config import load_hf_config
    from jaxeval.models.kv_policy import from_flags

    config = named_config(args.model)
    if config is None:
        folder = Path(args.model)
        if not (folder / "config.json").is_file():
            raise ConfigError(f"--model {args.model!r}: not a named shape and no config.json there")
        config = load_hf_config(folder)
    from_flags(None if args.kv_cache == "exact" else args.kv_cache)  # checked here; _programs passes it on
    return config


def _mesh_candidates(spec, t, config) -> list:
    """Mesh specs to try, in order: the one given, or (auto) tensor as wide as the heads allow with
    context (data for hybrids) over the rest, then fsdp over every chip, then tensor x fsdp; on several
    slices first a slice's own mesh with data, then fsdp, across the slices (the tensor and context
    collectives stay on the slice's ICI); an MoE's expert over every chip first."""
    from jaxeval.models.hybrid_layout import is_hybrid
    from jaxeval.models.mesh import auto_mesh_shape

    if spec == "none" or (spec is None and t.chips == 1):
        return [None]  # one chip of the target
    if spec not in (None, "auto"):
        return [spec]
    if t.chips == 1:
        return [None]
    text = lambda shape: ",".join(f"{k}={v}" for k, v in shape.items() if v > 1)
    shape = auto_mesh_shape(t.chips, config.num_heads, config.num_kv_heads, context_parallel=not is_hybrid(config))
    out = [text(shape), f"fsdp={t.chips}"]
    if shape["tensor"] > 1 and t.chips // shape["tensor"] > 1:
        out.append(f"tensor={shape['tensor']},fsdp={t.chips // shape['tensor']}")
    if t.slices > 1:  # the slices on the outermost axis (devices come slice by slice): only it crosses the DCN
        inner = auto_mesh_shape(t.chips // t.slices, config.num_heads, config.num_kv_heads,
                                context_parallel=not is_hybrid(config))
        across = [inner | {"data": inner["data"] * t.slices}]
        if inner["data"] == 1:
            across.append(inner | {"fsdp": t.slices})
        out = [text(s) for s in across] + out
    if config.moe is not None and config.moe.num_experts % t.chips == 0:
        out.insert(0, f"expert={t.chips}")
    out = list(dict.fromkeys(out))
    return out if spec == "auto" or spec is None else out[:1]


def _which(args) -> str:
    """--programs (a namespace from `jaxeval run --target` has none: all)."""
    return getattr(args, "programs", None) or "all"


def _programs(config, abstract, dtype, args, w, backend):
    from jaxeval.aot.programs import decode_programs, read_programs
    from jaxeval.models.kv_policy import from_flags

    policy = from_flags(None if args.kv_cache == "exact" else args.kv_cache)  # the run's Runtime.kv_cache
    progs = []
    which = _which(args)
    if w.read and which != "generate":
        progs += read_programs(config, abstract, dtype, tokens=w.tokens, rows=w.rows, read_positions=w.read_positions,
                               prefill_chunk=args.prefill_chunk, backend=backend, kv_cache=policy)
    if w.new_tokens > 0 and which != "read":
        progs += decode_programs(config, abstract, dtype, prompt=w.tokens, new_tokens=w.new_tokens, rows=w.rows,
                                 prefill_chunk=args.prefill_chunk, backend=backend, kv_cache=policy)
    return progs


def _compile_all(config, abstract, dtype, args, workloads, backend, t, first_failure=False) -> list[dict]:
    """Every program's record, each program once (two reads of one length bucket share their prefill
    chunk); first_failure: stop at the first that does not fit (another mesh is next)."""
    from jaxeval.aot.compiled import compile_program

    records, seen = [], set()
    for w in workloads:
        for program in _programs(config, abstract, dtype, args, w, backend):
            if program.name in seen:
                continue
            seen.add(program.name)
            record = compile_program(program, t, hlo_dir=args.hlo_dir) | {"length": w.tokens, "rows": w.rows}
            if w.tasks:
                record["tasks"] = list(w.tasks)
            _progress(record)
            records.append(record)
            if first_failure and not record["fits"]:
                return records
    return records


def _progress(record) -> None:
    peak = record["peak_bytes_per_chip"]
    state = "ok" if record["fits"] else ("DOES NOT FIT" if record["compiled"] else "failed")
    print(f"  compiled {record['name']} in {record['compile_s']} s: "
          f"{'-' if peak is None else f'{peak / 2 ** 30:.2f} GiB'} {state}", file=sys.stderr, flush=True)


def _report(args, t, config, devices, spec, workloads_at, backend, rows, auto_batch, last=True) -> dict:
    import jax.numpy as jnp

    from jaxeval.aot.programs import Abstract
    from jaxeval.models.mesh import describe, make_mesh
    from jaxeval.models.sharding import check_mesh_fits

    dtype = jnp.bfloat16 if args.dtype == "bfloat16" else jnp.float32
    mesh = None
    if spec is not None:
        from jaxeval.models.hybrid_layout import is_hybrid

        mesh = make_mesh(spec, devices=list(devices), num_heads=config.num_heads, num_kv_heads=config.num_kv_heads,
                         context_parallel=not is_hybrid(config))
        check_mesh_fits(config, mesh, args.prefill_chunk)
    abstract = Abstract(mesh, devices[0])
    search = None
    if auto_batch:
        rows, search = _largest_batch(config, abstract, dtype, args, workloads_at(1)[0], backend, t, auto_batch)
    workloads, counted = workloads_at(rows)
    records = _compile_all(config, abstract, dtype, args, workloads, backend, t, first_failure=not last)
    fits = all(r["fits"] for r in records)
    report = {"target": t.name, "platform": t.platform, "chips": t.chips, "hbm_bytes_per_chip": t.hbm_bytes,
              "device_kind": devices[0].device_kind, "model": args.model, "mesh": describe(mesh),
              "mesh_spec": None if mesh is None else ",".join(f"{k}={v}" for k, v in mesh.shape.items() if v > 1),
              "batch_size": rows, "attention": backend, "dtype": args.dtype,
              "lengths": sorted({w.tokens for w in workloads}), "fits": fits,
              "workloads": [dataclasses.asdict(w) for w in workloads], "tasks": counted,
              "programs": records, "batch_search": search,
              "notes": _notes(t)}
    report["verdict"] = "fits" if fits else _verdict(report, config, abstract, dtype, args, workloads, backend, t)
    return report


def _notes(t) -> list[str]:
    if t.platform == "cuda":
        return ["CUDA: compiled without a GPU, so nothing was autotuned (default Triton/cuBLAS choices); memory "
                "from the compiler's buffer assignment, no time estimate"]
    return ["flops_compiler is XLA's cost analysis: a loop body (the layer scan) is counted once, not per trip",
            "time.xla_s: the fusions' estimated_cycles x known trip counts at the chip clock; time.mosaic_s: splash "
            "blocks executed at the chip's peak (the cost model does not see Mosaic kernels)"]


def _fits_at(config, abstract, dtype, args, workloads, rows, backend, t) -> bool:
    """Whether the largest programs (the prefill chunk, the decode step) at `rows` compile and fit."""
    from jaxeval.aot.compiled import compile_program
    from jaxeval.aot.workloads import largest

    for w in largest(workloads):
        for program in _programs(config, abstract, dtype, args, w.at(rows), backend):
            if program.name.startswith(("gather_rows", "read_head")):
                continue
            if not compile_program(program, t)["fits"]:
                return False
    return True


def _largest_batch(config, abstract, dtype, args, workloads, backend, t, cap=None) -> tuple[int, list]:
    """The largest power of two of rows (up to cap, AUTO_CAP by default) whose programs fit, by
    compiling: doubling until one does not (a larger batch only adds memory)."""
    tried, best, rows = [], 0, 1
    cap = cap or AUTO_CAP
    while rows <= cap:
        ok = _fits_at(config, abstract, dtype, args, workloads, rows, backend, t)
        tried.append({"rows": rows, "fits": ok})
        print(f"  batch {rows}: {'fits' if ok else 'does not fit'}", file=sys.stderr, flush=True)
        if not ok:
            break
        best, rows = rows, rows * 2
    if best == 0:
        longest = max(w.tokens + w.new_tokens for w in workloads)
        raise ConfigError(f"compile: not even one sequence of {longest} tokens fits {t.name} on this mesh "
                          "(try another --mesh or a larger target)")
    return best, tried


def _verdict(report, config, abstract, dtype, args, workloads, backend, t) -> str:
    bad = next(r for r in report["programs"] if not r["fits"])
    peak = bad["peak_bytes_per_chip"]
    what = f"needs {peak / 2 ** 30:.2f} GiB per chip" if peak else f"does not compile ({bad['error']})"
    nearest = "no smaller batch fits"
    rows = report["batch_size"] // 2
    while rows >= 1:
        if _fits_at(config, abstract, dtype, args, workloads, rows, backend, t):
            nearest = f"--batch_size {rows} fits"
            break
        rows //= 2
    return (f"compile: {bad['name']} at {bad['length']} tokens {what}; {t.name} has "
            f"{t.hbm_bytes / 2 ** 30:.2f} GiB per chip (mesh {report['mesh']}); {nearest}")


def _print_table(report: dict) -> None:
    gib = 2 ** 30
    print(f"{report['target']} ({report['chips']} x {report['device_kind']}, {report['hbm_bytes_per_chip'] / gib:.2f} "
          f"GiB each), mesh {report['mesh']}, batch {report['batch_size']}, attention {report['attention']}")
    print(f"{'program':<58} {'peak GiB':>9} {'weights':>8} {'kv':>7} {'temp':>7} {'fits':>5} {'compile s':>9} "
          f"{'est. ms':>9}")
    for r in report["programs"]:
        peak = r["peak_bytes_per_chip"]
        mem = r.get("memory", {})
        est = r.get("time", {}).get("total_s")
        print(f"{r['name'][:58]:<58} {'-' if peak is None else f'{peak / gib:.2f}':>9} "
              f"{r['holds'].get('weights', 0) / gib:>8.2f} {r['holds'].get('kv_cache', 0) / gib:>7.2f} "
              f"{mem.get('temp', 0) / gib:>7.2f} {'yes' if r['fits'] else 'NO':>5} {r['compile_s'] or 0:>9.1f} "
              f"{'-' if est is None else f'{est * 1e3:.3f}':>9}")
        if r["error"]:
            print(f"    {r['error'][:200]}")
    for note in report["notes"]:
        print(f"  note: {note}")
