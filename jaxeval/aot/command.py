"""`jaxeval compile TARGET --model M ...`: every program of a run compiled for a named accelerator
from abstract shapes (no weights read, no chip needed): memory per chip, FLOPs and a time estimate
from the compiler, the largest batch and a mesh that fit (by compiling, --batch_size auto / --mesh auto).

Exit 0 when every program fits, 2 (one line: the program, its bytes, the chip's, the nearest batch
that fits) when one does not.
"""

from __future__ import annotations

import json
import sys

from jaxeval.aot import targets as tg
from jaxeval.errors import ConfigError

AUTO_CAP = 64  # the most rows --batch_size auto tries


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


def add_arguments(p) -> None:
    p.add_argument("target", help=f"accelerator to compile for: {', '.join(tg.TARGETS)}")
    p.add_argument("--model", required=True, help="model folder (config.json is enough) or a named shape: "
                   "llama-3.1-8b, llama-3.1-70b, qwen3-30b-a3b, qwen3.5-hybrid-4b, llama-8b, tiny-llama")
    p.add_argument("--lengths", default="32k", help="input tokens of the reads compiled, e.g. 32k,128k")
    p.add_argument("--mesh", default=None, help="device mesh over the target's chips (e.g. tensor=8), or auto "
                   "(the first candidate that compiles and fits); default: auto on several chips, none on one")
    p.add_argument("--batch_size", default="1", help="sequences read (and prompts decoded) together, or auto: "
                   "the largest power of two up to 64 whose programs fit, found by compiling")
    p.add_argument("--new_tokens", type=int, default=0, help="also compile generation: the prompt's prefill and "
                   "the decode step with a cache for the length plus this many tokens")
    p.add_argument("--read_positions", type=int, default=8, help="LM-head rows per sequence (8)")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="bfloat16")
    p.add_argument("--attention", choices=("chunked", "xla", "splash", "cudnn"), default=None,
                   help="default: splash on TPU targets, chunked on CUDA ones")
    p.add_argument("--prefill_chunk", type=int, default=2048, help="tokens per prefill step")
    p.add_argument("--kv_cache", choices=("exact", "int8", "fp8"), default="exact")
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--hlo_dir", default=None, help="write each compiled program's optimized HLO text here")


def run(args) -> int:
    t = tg.target(args.target)
    tg.prepare_environment(t.platform)
    tg.check_installed(t)
    config = _config(args)
    lengths = parse_lengths(args.lengths)
    backend = args.attention or ("splash" if t.platform == "tpu" else "chunked")
    from jaxeval.models.attention import check_attention

    check_attention(backend, config, args.dtype, platform="tpu" if t.platform == "tpu" else "gpu")
    devices = tg.devices(t.name)
    meshes = _mesh_candidates(args.mesh, t, config)
    auto_batch = str(args.batch_size).strip() == "auto"
    rows = 1 if auto_batch else _positive(args.batch_size, "--batch_size")
    report, refused = None, []
    for spec in meshes:
        try:
            report = _report(args, t, config, devices, spec, lengths, backend, rows, auto_batch,
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
    _print_table(report)
    if args.out:
        from jaxeval.io.fs import write_text_atomic

        print(f"wrote {write_text_atomic(args.out, json.dumps(report, indent=2) + chr(10))}")
    if not report["fits"]:
        print(report["verdict"], file=sys.stderr)
        return 2
    return 0


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
    context (data for hybrids) over the rest, then fsdp over every chip, then tensor x fsdp."""
    from jaxeval.models.hybrid_layout import is_hybrid
    from jaxeval.models.mesh import auto_mesh_shape

    if spec not in (None, "auto"):
        return [spec]
    if t.chips == 1:
        return [None]
    shape = auto_mesh_shape(t.chips, config.num_heads, config.num_kv_heads, context_parallel=not is_hybrid(config))
    first = ",".join(f"{k}={v}" for k, v in shape.items() if v > 1)
    out = [first, f"fsdp={t.chips}"]
    if shape["tensor"] > 1 and t.chips // shape["tensor"] > 1:
        out.append(f"tensor={shape['tensor']},fsdp={t.chips // shape['tensor']}")
    if config.moe is not None and config.moe.num_experts % t.chips == 0:
        out.insert(0, f"expert={t.chips}")
    return out if spec == "auto" or spec is None else out[:1]


def _programs(config, abstract, dtype, args, length, rows, backend):
    from jaxeval.aot.programs import decode_programs, read_programs
    from jaxeval.models.kv_policy import from_flags

    policy = from_flags(None if args.kv_cache == "exact" else args.kv_cache)  # the run's Runtime.kv_cache
    progs = read_programs(config, abstract, dtype, tokens=length, rows=rows, read_positions=args.read_positions,
                          prefill_chunk=args.prefill_chunk, backend=backend, kv_cache=policy)
    if args.new_tokens > 0:
        progs += decode_programs(config, abstract, dtype, prompt=length, new_tokens=args.new_tokens, rows=rows,
                                 prefill_chunk=args.prefill_chunk, backend=backend, kv_cache=policy)
    return progs


def _compile_all(config, abstract, dtype, args, lengths, rows, backend, t, first_failure=False) -> list[dict]:
    """Every program's record; first_failure: stop at the first that does not fit (another mesh is next)."""
    from jaxeval.aot.compiled import compile_program

    records = []
    for length in lengths:
        for program in _programs(config, abstract, dtype, args, length, rows, backend):
            record = compile_program(program, t, hlo_dir=args.hlo_dir) | {"length": length, "rows": rows}
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


def _report(args, t, config, devices, spec, lengths, backend, rows, auto_batch, last=True) -> dict:
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
        rows, search = _largest_batch(config, abstract, dtype, args, lengths, backend, t)
    records = _compile_all(config, abstract, dtype, args, lengths, rows, backend, t, first_failure=not last)
    fits = all(r["fits"] for r in records)
    report = {"target": t.name, "platform": t.platform, "chips": t.chips, "hbm_bytes_per_chip": t.hbm_bytes,
              "device_kind": devices[0].device_kind, "model": args.model, "mesh": describe(mesh),
              "batch_size": rows, "attention": backend, "dtype": args.dtype, "lengths": lengths, "fits": fits,
              "programs": records, "batch_search": search,
              "notes": _notes(t)}
    report["verdict"] = "fits" if fits else _verdict(report, config, abstract, dtype, args, backend, t)
    return report


def _notes(t) -> list[str]:
    if t.platform == "cuda":
        return ["CUDA: compiled without a GPU, so nothing was autotuned (default Triton/cuBLAS choices); memory "
                "from the compiler's buffer assignment, no time estimate"]
    return ["flops_compiler is XLA's cost analysis: a loop body (the layer scan) is counted once, not per trip",
            "time.xla_s: the fusions' estimated_cycles x known trip counts at the chip clock; time.mosaic_s: splash "
            "blocks executed at the chip's peak (the cost model does not see Mosaic kernels)"]


def _fits_at(config, abstract, dtype, args, lengths, rows, backend, t) -> bool:
    """Whether the largest programs (the prefill chunk, the decode step) at `rows` compile and fit."""
    from jaxeval.aot.compiled import compile_program

    for length in sorted(lengths, reverse=True)[:1]:
        for program in _programs(config, abstract, dtype, args, length, rows, backend):
            if program.name.startswith(("gather_rows", "read_head")):
                continue
            if not compile_program(program, t)["fits"]:
                return False
    return True


def _largest_batch(config, abstract, dtype, args, lengths, backend, t) -> tuple[int, list]:
    """The largest power of two of rows (up to AUTO_CAP) whose programs fit, by compiling: doubling
    until one does not (a larger batch only adds memory)."""
    tried, best, rows = [], 0, 1
    while rows <= AUTO_CAP:
        ok = _fits_at(config, abstract, dtype, args, lengths, rows, backend, t)
        tried.append({"rows": rows, "fits": ok})
        print(f"  batch {rows}: {'fits' if ok else 'does not fit'}", file=sys.stderr, flush=True)
        if not ok:
            break
        best, rows = rows, rows * 2
    if best == 0:
        raise ConfigError(f"compile: not even one sequence of {max(lengths)} tokens fits {t.name} on this mesh "
                          "(try another --mesh or a larger target)")
    return best, tried


def _verdict(report, config, abstract, dtype, args, backend, t) -> str:
    bad = next(r for r in report["programs"] if not r["fits"])
    peak = bad["peak_bytes_per_chip"]
    what = f"needs {peak / 2 ** 30:.2f} GiB per chip" if peak else f"does not compile ({bad['error']})"
    nearest = "no smaller batch fits"
    rows = report["batch_size"] // 2
    while rows >= 1:
        if _fits_at(config, abstract, dtype, args, report["lengths"], rows, backend, t):
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
