"""Where chunked attention's time goes, against torch's SDPA, in one process.

    python perf/attention_profile.py [--tokens 8192] [--rounds 8] [--cores N] [--option KEY=VALUE ...] [--out FILE.json]

1. pieces: one online-softmax key-block step of the 57M Llama's attention (8 heads / 2 KV, head_dim
   64; 256 queries x 4 heads of a KV group = 1,024 rows against 256 keys), 64 blocks in a fori_loop,
   built up piece by piece: the two matmuls alone, + the running max, + the exp pass (p, the
   rescale), + the sum (the whole step). The differences are each piece's CPU time.
2. read: one layer's causal attention over a whole --tokens read, as the engine runs it (2,048-query
   chunks against the cache, jaxeval.models.attention.chunked_attention) and as transformers does
   (torch.nn.functional.scaled_dot_product_attention, is_causal, enable_gqa), with a float32
   2048x2048 matmul for the peak. Interleaved rounds, best of each; CPU seconds of this process
   (time other processes held the cores does not count) and wall seconds.

--option KEY=VALUE (repeatable): XLA compiler options (`jax.jit(compiler_options=...)`, e.g.
xla_cpu_prefer_vector_width=512) for a third side, "jaxeval+options", timed in the same rounds, its
output compared element for element with the plain side's: an XLA flag's effect measured in one
process, where separate processes under a shared machine's load differ by more than the flag.
--cores N: this process (XLA's and torch's threads) pinned to N of its allowed CPUs and torch given N
threads, set before jax starts; --cores 1 measures each side's work on one core, without the
threads' synchronisation (docs/performance_2026-12.md, section 6).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_step import write_report  # noqa: E402 (the perf scripts' one --out writer)


def best_of(fns: dict, rounds: int) -> dict:
    import jax

    for f in fns.values():
        jax.block_until_ready(f())
    best = {n: [float("inf"), float("inf")] for n in fns}
    for _ in range(rounds):
        for n, f in fns.items():
            w0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(f())
            best[n] = [min(best[n][0], time.perf_counter() - w0), min(best[n][1], time.process_time() - c0)]
    return best


def step_pieces(rounds: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    rows_n, bk, d, blocks, scale = 1024, 256, 64, 64, 0.125
    rng = np.random.default_rng(0)
    rows = jnp.asarray(rng.standard_normal((1, 2, rows_n, d)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((1, blocks * bk, 2, d)), jnp.float32) for _ in range(2))

    def make(kind):
        def step(j, carry):
            m, l, acc = carry
            kb, vb = (jax.lax.dynamic_slice_in_dim(x, j * bk, bk, 1).transpose(0, 2, 1, 3) for x in (k, v))
            s = jnp.einsum("bkrd,bksd->bkrs", rows, kb, preferred_element_type=jnp.float32)
            if kind == "matmuls":
                return m, l, acc + jnp.einsum("bkrs,bksd->bkrd", s, vb)
            m_new = jnp.maximum(m, s.max(-1) * scale)
            if kind == "+max":
                return m_new, l, acc + jnp.einsum("bkrs,bksd->bkrd", s, vb)
            p, alpha = jnp.exp(s * scale - m_new[..., None]), jnp.exp(m - m_new)
            acc = acc * alpha[..., None] + jnp.einsum("bkrs,bksd->bkrd", p, vb)
            return m_new, (l if kind == "+exp" else l * alpha + p.sum(-1)), acc

        shape = (1, 2, rows_n)
        run = jax.jit(lambda: jax.lax.fori_loop(0, blocks, step, (jnp.full(shape, -1e30), jnp.zeros(shape),
                                                                  jnp.zeros(shape + (d,)))))
        return run

    best = best_of({kind: make(kind) for kind in ("matmuls", "+max", "+exp", "+sum (whole step)")}, rounds)
    flops = blocks * 4 * 2 * rows_n * bk * d
    return {kind: {"wall_s": w, "cpu_s": c, "matmul_flops_per_cpu_s": flops / c} for kind, (w, c) in best.items()}


def whole_read(tokens: int, rounds: int, options: dict | None = None) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np
    import torch

    from jaxeval.models.attention import chunked_attention

    chunk, h, kv, d = 2048, 8, 2, 64
    rng = np.random.default_rng(0)
    qn, kn, vn = (rng.standard_normal((1, tokens, n, d)).astype(np.float32) for n in (h, kv, kv))
    q, k, v = map(jnp.asarray, (qn, kn, vn))
    def jit_attend(opts):
        return jax.jit(lambda q, k, v, start: chunked_attention(q, k, v, start, jnp.int32(0), d ** -0.5),
                       compiler_options=opts)

    sides = {"jaxeval": jit_attend(None)}
    if options:
        sides["jaxeval+options"] = jit_attend(options)
    tq, tk, tv = (torch.from_numpy(x).transpose(1, 2).contiguous() for x in (qn, kn, vn))
    a = jnp.ones((2048, 2048), jnp.float32)
    matmul = jax.jit(lambda x: x @ x)

    def torch_sdpa():
        with torch.no_grad():
            return torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True, enable_gqa=True).numpy()

    def read(attend):
        return lambda: [attend(q[:, s:s + chunk], k, v, jnp.int32(s)) for s in range(0, tokens, chunk)]

    fns = {"matmul": lambda: matmul(a), **{name: read(attend) for name, attend in sides.items()}, "torch": torch_sdpa}
    best = best_of(fns, rounds)
    peak = 2 * 2048 ** 3 / best["matmul"][0]
    flops = 4 * h * d * tokens * (tokens + 1) / 2
    out = {"tokens": tokens, "causal_flops": flops, "matmul_peak_flops_per_s": peak, "torch_threads": torch.get_num_threads()}
    for side in (*sides, "torch"):
        out[side] = {"wall_s": best[side][0], "cpu_s": best[side][1], "share_of_peak": flops / best[side][0] / peak}
    for side in sides:
        out[f"{side}_over_torch"] = {"wall": best[side][0] / best["torch"][0], "cpu": best[side][1] / best["torch"][1]}
    if options:
        plain, tuned = (np.concatenate([np.asarray(x) for x in fns[side]()], axis=1) for side in sides)
        out["options"] = {**options, "identical_to_jaxeval": bool(np.array_equal(plain, tuned)),
                          "max_abs_diff": float(np.abs(plain - tuned).max())}
    return out


def option_value(text: str):
    """KEY=VALUE -> (KEY, VALUE as int, bool or str)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--option {text!r}: expected KEY=VALUE (e.g. xla_cpu_prefer_vector_width=512)")
    if value.lower() in ("true", "false"):
        return key, value.lower() == "true"
    return key, int(value) if value.lstrip("-").isdigit() else value


def pin(cores: int) -> list[int]:
    """Pin this process to its first `cores` allowed CPUs (before jax or torch start their threads)."""
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= cores <= len(allowed):
        raise SystemExit(f"--cores {cores}: this process may use 1 to {len(allowed)} CPUs")
    os.sched_setaffinity(0, allowed[:cores])
    import torch

    torch.set_num_threads(cores)
    return allowed[:cores]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--cores", type=int, default=None, help="pin to this many CPUs (default: all allowed)")
    parser.add_argument("--option", action="append", default=[], type=option_value, metavar="KEY=VALUE",
                        help="an XLA compiler option for a jaxeval+options side (repeatable)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    cpus = pin(args.cores) if args.cores else sorted(os.sched_getaffinity(0))
    report = {"load_before": list(os.getloadavg()), "cpus": cpus, "pieces": step_pieces(args.rounds),
              "read": whole_read(args.tokens, max(3, args.rounds // 2), dict(args.option) or None),
              "load_after": list(os.getloadavg())}
    print(json.dumps(report, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()
