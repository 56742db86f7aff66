"""The batch decode step's time against its cache length, this checkout against a baseline revision,
measured in one process: both revisions' `decode_step` are imported side by side (the baseline's
package is exported from git into a temporary folder and imported first), then timed back to back,
interleaved, min of --repeats.

For each cache kind (exact, int8) and cache length (--slots), a batch of --rows rows decodes one
token at a position near the start (`early`: attention reads the same few key blocks at every cache
length, so any growth is the step's own handling of the cache) and one near the end (`late`:
attention reads the whole cache). Random weights of a `jaxeval bench` shape (default: the 57M Llama).

    python perf/decode_step.py --baseline 7c95f9d --out perf/results/decode_step.json
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def load_package(folder: Path | None):
    """The jaxeval modules the step needs, imported from folder (None: this checkout), then forgotten
    by sys.modules so another copy can be imported beside them (functions keep their own globals)."""
    if folder is not None:
        sys.path.insert(0, str(folder))
    try:
        from jaxeval.bench.shapes import SHAPES
        try:  # the cache types (jaxeval.engine.kv_cache) and the Runtime static; before them, engine.generate's step
            from jaxeval.engine.kv_cache import KVCache, QuantizedKVCache, decode_step
            from jaxeval.engine.runtime import Runtime
            kinds = {"exact": KVCache, "quantized": QuantizedKVCache, "Runtime": Runtime}
        except ImportError:
            from jaxeval.engine.generate import decode_step
            kinds = None
        from jaxeval.engine.sampling import prompt_keys
        from jaxeval.models.config import config_from_hf
        from jaxeval.models.kv_policy import from_flags, new_kv_cache
        from jaxeval.models.param_layout import param_shapes
        from jaxeval.models.rope import RopeTables, row_tables
        try:  # the decode cache's layout ([L, B, KV, S, hd] since kv_cache.cache_shape; before, [B, L, S, KV, hd])
            from jaxeval.engine.kv_cache import cache_shape
        except ImportError:
            cache_shape = None
        return dict(cache_shape=cache_shape, SHAPES=SHAPES, decode_step=decode_step, kinds=kinds, prompt_keys=prompt_keys, config_from_hf=config_from_hf,
                    from_flags=from_flags, new_kv_cache=new_kv_cache, param_shapes=param_shapes,
                    RopeTables=RopeTables, row_tables=row_tables)
    finally:
        for name in [n for n in sys.modules if n == "jaxeval" or n.startswith("jaxeval.")]:
            del sys.modules[name]
        if folder is not None:
            sys.path.remove(str(folder))


def make_step(pkg, shape: str, kind: str, rows: int, slots: int, position: int):
    """() -> (wall, process CPU) seconds of one decode step (after a warm-up), on donated caches kept
    between calls. CPU time is the steadier figure on a shared machine: it counts the step's work
    across XLA's threads, not the time other processes held the cores."""
    import dataclasses

    import jax
    import jax.numpy as jnp
    config = pkg["config_from_hf"](pkg["SHAPES"][shape][0])
    policy = pkg["from_flags"](None if kind == "exact" else kind)
    if pkg["kinds"] is None:  # a revision whose config carried the policy
        config = dataclasses.replace(config, kv_cache=policy)
    rng = np.random.default_rng(0)
    shapes = pkg["param_shapes"](config)
    params = jax.tree.map(lambda s: jnp.asarray(0.05 * rng.standard_normal(s), jnp.float32), shapes,
                          is_leaf=lambda x: isinstance(x, tuple))
    def shape(width):
        if pkg["cache_shape"] is not None:
            return pkg["cache_shape"](config, rows, slots, width)
        return rows, config.num_layers, slots, config.num_kv_heads, width

    cache = [pkg["new_kv_cache"](policy, shape(width), jnp.float32,
                                 lambda s, d: jnp.asarray(rng.standard_normal(s)).astype(d))
             for width in (config.head_dim, config.value_dim)]
    tokens = jnp.asarray(rng.integers(0, config.vocab_size, rows), jnp.int32)
    positions = jnp.full(rows, position, jnp.int32)
    keys = pkg["prompt_keys"](np.uint32(0), jnp.arange(rows, dtype=jnp.int32))
    rope = pkg["RopeTables"](*(jnp.asarray(t) for t in pkg["row_tables"](config, [position + 1] * rows)))
    kinds = pkg["kinds"]
    if kinds is not None:
        cache = kinds["quantized" if policy is not None and policy.quantized else "exact"](*cache)
        runtime = kinds["Runtime"](dtype="float32", kv_cache=policy)
    state = {"cache": cache}

    def run() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        if kinds is None:
            chosen, _, k, v = pkg["decode_step"](params, *state["cache"], tokens, positions, keys, jnp.float32(0),
                                                 jnp.float32(1), rope, config=config)
            state["cache"] = [k, v]
        else:
            chosen, _, state["cache"] = pkg["decode_step"](params, state["cache"], tokens, positions, keys,
                                                           jnp.float32(0), jnp.float32(1), rope, config=config,
                                                           runtime=runtime)
        chosen.block_until_ready()
        return time.perf_counter() - wall, time.process_time() - cpu

    run()  # compile
    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="7c95f9d", help="git revision to compare against")
    parser.add_argument("--shape", default="llama-57m")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--slots", default="256,4096", help="comma-separated cache lengths")
    parser.add_argument("--kinds", default="exact,int8")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    slots = [int(s) for s in args.slots.split(",")]
    kinds = args.kinds.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "jaxeval"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        versions = {"baseline": load_package(Path(tmp)), "this": load_package(None)}
        runs = {}
        for kind in kinds:
            for s in slots:
                for where, position in (("early", 100), ("late", s - 2)):
                    for name, pkg in versions.items():
                        runs[(kind, s, where, name)] = make_step(pkg, args.shape, kind, args.rows, s, position)
    times = {clock: {key: math.inf for key in runs} for clock in ("wall", "cpu")}
    for _ in range(args.repeats):  # interleaved: a slow moment of a shared machine hits every variant alike
        for key, run in runs.items():
            for clock, seconds in zip(("wall", "cpu"), run()):
                times[clock][key] = min(times[clock][key], seconds)

    rows = []
    for kind in kinds:
        for where in ("early", "late"):
            entry = {"kind": kind, "position": where}
            for clock in ("wall", "cpu"):
                t = times[clock]
                for name in ("baseline", "this"):
                    ms = {s: t[(kind, s, where, name)] * 1e3 for s in slots}
                    growth = round(ms[slots[-1]] / ms[slots[0]], 3)
                    entry[f"{name}_{clock}"] = {"ms": {str(s): round(v, 3) for s, v in ms.items()},
                                                f"ratio_{slots[-1]}_to_{slots[0]}": growth}
                entry[f"this_over_baseline_{clock}"] = {
                    str(s): round(t[(kind, s, where, "this")] / t[(kind, s, where, "baseline")], 3) for s in slots}
            rows.append(entry)
            print(json.dumps(entry))
    report = {"command": "python perf/decode_step.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "baseline": args.baseline, "shape": args.shape, "rows": args.rows, "repeats": args.repeats,
              "positions": {"early": 100, "late": "slots - 2"},
              "unit": "ms per decode step, min of repeats (wall and process CPU time)",
              "results": rows}
    write_report(report, args.out)
    return 0


def write_report(report: dict, out: str | None) -> None:
    """The report as indented JSON at out (its folder made), when out is given."""
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
