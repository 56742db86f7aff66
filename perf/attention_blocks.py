"""The chunked attention backend's block sizes on this machine: one prefill chunk against a long cache.

    python perf/attention_blocks.py [--keys 32768] [--queries 2048] [--blocks 256x256,256x512,128x256]
                                    [--heads 8 --kv_heads 2 --head_dim 64] [--window 0] [--out FILE.json]

Times jaxeval.models.attention.chunked_attention for each (block_q x block_k) given, the chunk's queries
at the end of the cache (the last, longest chunk of a read), every call blocked until ready. Calls are
interleaved across the sizes (--rounds rounds) and the best of each is reported as a ratio to the first
size, beside the share of the float32 matmul peak (best of five 2048x2048 matmuls, same process) that the
causal FLOPs reach (4 x head_dim per visible (query, key) pair per head), and the largest difference
from the first size's output. Defaults: the 57M Llama's attention (issue 18's CPU shape).
"""

from __future__ import annotations

import argparse
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=32768)
    parser.add_argument("--queries", type=int, default=2048)
    parser.add_argument("--blocks", default="256x256,256x512,128x256,512x256")
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv_heads", type=int, default=2)
    parser.add_argument("--head_dim", type=int, default=64)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    from jaxeval.models.attention import chunked_attention

    sizes = [tuple(int(n) for n in b.split("x")) for b in args.blocks.split(",")]
    rng = np.random.default_rng(0)
    t, s, h, kv, d = args.queries, args.keys, args.heads, args.kv_heads, args.head_dim
    q = jnp.asarray(rng.standard_normal((1, t, h, d)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((1, s, kv, d)), jnp.float32) for _ in range(2))
    start, window = jnp.int32(s - t), jnp.int32(args.window)
    scale = d ** -0.5
    calls = {size: jax.jit(lambda q, k, v, st, w, size=size: chunked_attention(
        q, k, v, st, w, scale, block_q=size[0], block_k=size[1])) for size in sizes}
    outputs = {size: np.asarray(f(q, k, v, start, window)) for size, f in calls.items()}  # compiles

    def best_of(f, n):
        best = float("inf")
        for _ in range(n):
            t0 = time.perf_counter()
            jax.block_until_ready(f())
            best = min(best, time.perf_counter() - t0)
        return best

    a = jnp.ones((2048, 2048), jnp.float32)
    matmul = jax.jit(lambda x: x @ x)
    peak = 2 * 2048 ** 3 / best_of(lambda: matmul(a), 6)
    best = {size: float("inf") for size in sizes}
    for _ in range(args.rounds):
        for size, f in calls.items():
            best[size] = min(best[size], best_of(lambda: f(q, k, v, start, window), 1))
    positions = s - t + np.arange(t)
    visible = np.minimum(positions + 1, args.window) if args.window else positions + 1
    flops = 4 * h * d * float(visible.sum())
    base = sizes[0]
    report = {"queries": t, "keys": s, "heads": h, "kv_heads": kv, "head_dim": d, "window": args.window,
              "matmul_peak_flops_per_s": peak, "causal_flops": flops, "sizes": [
                  {"block_q": bq, "block_k": bk, "seconds": best[(bq, bk)], "ratio": best[(bq, bk)] / best[base],
                   "share_of_peak": flops / best[(bq, bk)] / peak,
                   "max_abs_diff": float(np.abs(outputs[(bq, bk)] - outputs[base]).max())} for bq, bk in sizes]}
    print(json.dumps(report, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
