"""`jaxeval compile TARGET ... --new_tokens N` for the generation programs alone: the read programs are left
out, and where the run prefills every row at once (prefill_rows) the one-row prefill (prefill_row: context
meshes, rows with different ropes) is compiled beside it at the same shape. Same flags as `jaxeval compile`.

    python perf/compile_generation.py v5p-8 --model llama-3.1-8b --lengths 130048 --batch_size 8 \
        --new_tokens 1024 --mesh tensor=4 --out perf/results/compile_generation_v5p-8.json
(in the libtpu venv: PYTHONPATH=. ~/venvs/tpu/bin/python perf/compile_generation.py ...)
"""
import dataclasses
import sys

import jax.numpy as jnp

import jaxeval.aot.programs as P

real = P.decode_programs


def with_row(config, a, dtype, **kw):
    progs = real(config, a, dtype, **kw)
    fill = progs[0]
    if fill.name.startswith("prefill_rows"):
        params, cache, ids, start, row, rope = fill.args
        one = dataclasses.replace(fill, name=fill.name.replace("prefill_rows", "prefill_row"),
                                  args=(params, cache, a.place((1, ids.shape[1]), jnp.int32), start, row, rope),
                                  flops_needed=fill.flops_needed / kw["rows"], flops_xla=fill.flops_xla / kw["rows"],
                                  calls=fill.calls * kw["rows"])
        progs.insert(1, one)
    return progs


if __name__ == "__main__":
    from jaxeval.cli import main

    P.read_programs = lambda *a, **k: []
    P.decode_programs = with_row
    sys.exit(main(["compile"] + sys.argv[1:]))
