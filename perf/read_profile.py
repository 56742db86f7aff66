"""Where a jaxeval read spends its time: each prefill chunk, the LM head, and XLA's own FLOP counts.

    python perf/read_profile.py MODEL_FOLDER_OR_SHAPE [--tokens 8192] [--out FILE.json]
    python perf/read_profile.py llama-57m --head_rows 64,256,1024     # the LM head alone, by block size

Runs read()'s pieces one at a time on the same inputs `jaxeval bench` uses (random ids, every
position read), each blocked until ready: every prefill_chunk call (its start position shows how
attention grows along the sequence) and read_head. Also reports XLA's cost analysis (FLOPs of
the compiled programs, padding and masked work included) beside the FLOPs the read needs
(jaxeval.plan.flops.read_flops) and the float32 matmul peak measured in the same process.
--head_rows times only the LM head over every row, for each rows-per-block given (calls
interleaved, medians as ratios to the first), and checks that every block size gives the same bits.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--head_rows", default=None, help="comma-separated rows per head block to compare")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxeval
    from jaxeval.bench.shapes import SHAPES, shape_folder
    from jaxeval.bench.worker import random_ids
    from jaxeval.plan.flops import read_flops
    from jaxeval.engine.buckets import chunk_size, count_bucket, length_bucket
    from jaxeval.engine.read import gather_rows, host_rope, prefill_chunk, read_head

    folder = shape_folder(args.model) if args.model in SHAPES else args.model
    model = jaxeval.load_model(folder, dtype="float32")
    c, params = model.config, model._params
    n = args.tokens
    ids = random_ids(n, c.vocab_size)
    positions = np.arange(1, n)
    bucket, k_pad = length_bucket(n - 1), count_bucket(n - 1)
    chunk = chunk_size(bucket, model.prefill_chunk)
    padded = np.zeros((1, bucket), np.int32)
    padded[0, :n - 1] = ids[:n - 1]
    gather_at = np.full((1, k_pad), -1, np.int32)
    gather_at[0, :n - 1] = positions - 1
    tokens = np.zeros((k_pad, 1), np.int32)
    tokens[:n - 1, 0] = ids[positions]
    rope = host_rope(c, n)
    kw = dict(config=c, runtime=model.runtime)
    if args.head_rows:
        report = compare_head_rows(params, c, model.runtime, k_pad, [int(r) for r in args.head_rows.split(",")], args.repeats + 2)
        print(json.dumps(report, indent=2))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(report, f, indent=2)
        return

    def fresh():
        shape = (c.num_layers, 1, bucket, c.num_kv_heads, c.head_dim)
        return jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32), jnp.zeros((1, k_pad, c.hidden_size), jnp.float32)

    ck, cv, hidden = fresh()
    chunk_args = (params, ck, cv, jnp.asarray(padded[:, :chunk]), jnp.int32(0), rope)
    cost_chunk = prefill_chunk.lower(*chunk_args, **kw).compile().cost_analysis()
    head_args = (params, hidden[0], jnp.asarray(tokens))
    cost_head = read_head.lower(*head_args, **kw).compile().cost_analysis()
    cost_chunk = cost_chunk[0] if isinstance(cost_chunk, list) else cost_chunk
    cost_head = cost_head[0] if isinstance(cost_head, list) else cost_head

    a = jax.random.normal(jax.random.key(0), (2048, 2048), jnp.float32)
    matmul = jax.jit(lambda x, y: x @ y)
    matmul(a, a).block_until_ready()
    peak = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        matmul(a, a).block_until_ready()
        peak = max(peak, 2 * 2048 ** 3 / (time.perf_counter() - t0))

    runs = []
    for _ in range(1 + args.repeats):  # the first pass compiles
        ck, cv, hidden = fresh()
        chunks = []
        for start in range(0, n - 1, chunk):
            t0 = time.perf_counter()
            ck, cv, x = prefill_chunk(params, ck, cv, jnp.asarray(padded[:, start:start + chunk]), jnp.int32(start),
                                      rope, **kw)
            hidden = gather_rows(x, jnp.int32(start), hidden, jnp.asarray(gather_at), runtime=model.runtime)
            jax.block_until_ready(hidden)
            chunks.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        jax.block_until_ready(read_head(params, hidden[0], jnp.asarray(tokens), **kw))
        runs.append({"chunks_s": chunks, "head_s": time.perf_counter() - t0})
    timed = runs[1:] or runs
    chunk_s = [float(np.median([r["chunks_s"][i] for r in timed])) for i in range(len(timed[0]["chunks_s"]))]
    head_s = float(np.median([r["head_s"] for r in timed]))
    need = read_flops(c, n - 1, n - 1)
    need_no_head = read_flops(c, n - 1, 0)
    n_chunks = len(chunk_s)
    report = {
        "model": str(folder), "tokens": n, "bucket": bucket, "chunk": chunk, "load": list(os.getloadavg()),
        "matmul_peak_flops_per_s": peak,
        "chunk_seconds": chunk_s, "head_seconds": head_s, "total_seconds": sum(chunk_s) + head_s,
        "head_share": head_s / (sum(chunk_s) + head_s),
        "needed_flops": need,
        "xla_cost_note": "XLA cost analysis counts a while-loop body once (attention key blocks, head blocks)",
        "xla_flops_per_chunk_program": cost_chunk.get("flops"), "xla_flops_head_program": cost_head.get("flops"),
        "xla_flops_total": (cost_chunk.get("flops") or 0) * n_chunks + (cost_head.get("flops") or 0),
        "trunk_and_attention_fraction_of_peak": (need_no_head["total"]) / sum(chunk_s) / peak,
        "head_fraction_of_peak": need["head"] / head_s / peak,
        "read_fraction_of_peak": need["total"] / (sum(chunk_s) + head_s) / peak,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


def compare_head_rows(params, c, runtime, k: int, block_rows: list[int], repeats: int) -> dict:
    """Time read_head over k rows with each rows-per-block (jaxeval.engine.read.head_rows patched)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxeval.engine import read as engine_read

    hidden = jax.random.normal(jax.random.key(0), (k, c.hidden_size), jnp.float32)
    tokens = jnp.asarray(np.random.RandomState(0).randint(0, c.vocab_size, (k, 1)).astype(np.int32))
    chosen = engine_read.head_rows
    compiled, outputs = {}, {}
    try:
        for rows in block_rows:
            engine_read.head_rows = lambda k_, v_, rows=rows: min(rows, k_)  # noqa: E731 (read at trace time)
            fresh = jax.jit(functools.partial(engine_read.read_head.__wrapped__, config=c,
                                                      runtime=runtime))  # a new trace each time
            compiled[rows] = fresh.lower(params, hidden, tokens).compile()
            outputs[rows] = jax.block_until_ready(compiled[rows](params, hidden, tokens))
    finally:
        engine_read.head_rows = chosen
    times = {rows: [] for rows in block_rows}
    for _ in range(repeats):
        for rows, fn in compiled.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(params, hidden, tokens))
            times[rows].append(time.perf_counter() - t0)
    first = block_rows[0]
    median = {rows: float(np.median(t)) for rows, t in times.items()}
    return {"rows": k, "vocab": c.vocab_size, "default_rows": chosen(k, c.vocab_size), "load": list(os.getloadavg()),
            "seconds": times, "ratio_to_first": {rows: median[rows] / median[first] for rows in block_rows},
            "same_bits_as_first": {rows: bool((outputs[rows][0] == outputs[first][0]).all()
                                              and (outputs[rows][1] == outputs[first][1]).all()) for rows in block_rows}}


if __name__ == "__main__":
    main()
