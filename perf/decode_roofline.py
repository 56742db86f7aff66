"""The batched decode step compiled for a TPU target, against its HBM roofline.

Compiles only `decode_step` (the program `jaxeval compile ... --new_tokens N` compiles for a generation)
from abstract shapes, reads the compiled HLO's time estimate (jaxeval.aot.compiled.time_estimate: the
fusions' estimated cycles times their loops' trip counts) and sets it beside the roofline: the bytes a
step must read per chip (its shard of the weights, and the K/V of every row up to the prompt) over the
chip's HBM bandwidth. `--top N` lists the fusions that cost most (cycles x trips) with their shapes.

    PYTHONPATH=$PWD /work/venvs/tpu/bin/python perf/decode_roofline.py v5p-8 --model llama-3.1-8b \
        --prompt 130048 --new_tokens 1024 --batch_size 8 --mesh tensor=4 [--kv_cache int8] [--top 15]
"""
from __future__ import annotations

import argparse
import json
import re
import sys

# HBM bandwidth per chip, bytes/s (Cloud TPU's published figures)
HBM_BANDWIDTH = {"v5e": 819e9, "v5p": 2765e9, "v6e": 1640e9}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target")
    p.add_argument("--model", default="llama-3.1-8b")
    p.add_argument("--prompt", type=int, default=130048)
    p.add_argument("--new_tokens", type=int, default=1024)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--mesh", default=None)
    p.add_argument("--kv_cache", default="exact")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--hlo_dir", default=None)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    from jaxeval.aot import targets as tg

    tg.prepare_environment()
    import jax.numpy as jnp

    from jaxeval.aot.compiled import compile_program
    from jaxeval.aot.programs import Abstract, decode_programs
    from jaxeval.aot.shapes import named_config
    from jaxeval.models.kv_policy import from_flags
    from jaxeval.models.mesh import make_mesh

    t = tg.target(args.target)
    devices = tg.devices(t.name)
    config = named_config(args.model)
    mesh = None if args.mesh in (None, "none") else make_mesh(args.mesh, devices=list(devices),
                                                                num_heads=config.num_heads,
                                                                num_kv_heads=config.num_kv_heads)
    policy = from_flags(None if args.kv_cache == "exact" else args.kv_cache)
    progs = decode_programs(config, Abstract(mesh, devices[0]), jnp.bfloat16, prompt=args.prompt,
                            new_tokens=args.new_tokens, rows=args.batch_size, prefill_chunk=2048,
                            backend="splash", kv_cache=policy)
    step = progs[-1]
    import tempfile
    from pathlib import Path

    hlo_dir = args.hlo_dir or tempfile.mkdtemp(prefix="decode_roofline")
    record = compile_program(step, t, hlo_dir=hlo_dir)
    if not record["compiled"]:
        print(record["error"])
        return 1
    holds = step.holds
    cache_len = int(step.name.split("cache=")[1].rstrip("]"))
    kv_read = holds["kv_cache"] * args.prompt / cache_len if cache_len else holds["kv_cache"]
    bandwidth = HBM_BANDWIDTH[t.name.split("-")[0].split("x")[-1]]
    roofline = (holds["weights"] + kv_read) / bandwidth
    estimate = record["time"]["total_s"]
    out = {"target": t.name, "mesh": args.mesh, "rows": args.batch_size, "prompt": args.prompt,
           "kv_cache": args.kv_cache, "program": step.name, "estimate_s": estimate, "roofline_s": roofline,
           "ratio": estimate / roofline, "weights_bytes_per_chip": holds["weights"],
           "kv_read_bytes_per_chip": kv_read, "peak_bytes_per_chip": record["peak_bytes_per_chip"],
           "temp_bytes": record["memory"]["temp"], "compile_s": record["compile_s"], "time": record["time"]}
    print(json.dumps({k: v for k, v in out.items() if k != "time"}, indent=1))
    if args.top:
        hlo = next(Path(hlo_dir).glob(f"{t.name}-decode*.hlo.txt")).read_text()
        for cycles, line in top_fusions(hlo, step.dynamic_trips)[:args.top]:
            print(f"{cycles / t.clock_hz * 1e3:9.3f} ms  {line[:220]}")
    if args.out:
        from jaxeval.io.fs import write_text_atomic

        write_text_atomic(args.out, json.dumps(out, indent=2) + "\n")
    return 0


def top_fusions(hlo: str, dynamic_trips: float) -> list:
    """(cycles x the trips of the loops around it, the fusion's line) of every fusion, costliest first."""
    from jaxeval.aot.compiled import _COMPUTATION, _CYCLES, _WHILE, _trip_count

    computations, current = {}, None
    for line in hlo.splitlines():
        m = _COMPUTATION.match(line) if not line.startswith(" ") else None
        if m:
            current = m.group(1)
            computations[current] = []
        elif current is not None:
            computations[current].append(line)
    entry = next(name for name in computations if re.search(rf"ENTRY %?{re.escape(name)}\b", hlo))
    found = []

    def walk(name, times):
        for line in computations.get(name, []):
            c = _CYCLES.search(line)
            if c and "fusion" in line and int(c.group(1)) < 2 ** 63 - 1:
                found.append((int(c.group(1)) * times, line.strip()))
            body = _WHILE.search(line)
            if body:
                walk(body.group(1), times * (_trip_count(line, computations) or dynamic_trips))

    walk(entry, 1)
    return sorted(found, reverse=True)


if __name__ == "__main__":
    sys.exit(main())
