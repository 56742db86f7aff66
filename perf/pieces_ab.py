"""A read's pieces at a base checkout and in this one, in one process: the last prefill chunk, the LM head,
one layer's attention over the whole read.

    git worktree add /tmp/base 2ffffe8
    python perf/pieces_ab.py llama-57m --base /tmp/base --tokens 32768 --what chunk,attention
    python perf/pieces_ab.py ~/.cache/jaxeval/real_models/gemma3-270m --base /tmp/base --what head --head_rows 2048

Each checkout's jaxeval is imported in turn (its modules kept apart, so each has its own jit caches)
and its pieces are built on the same inputs: `chunk`, the read's last 2,048-token prefill_chunk
against a cache of --tokens (zeros but for a constant, donated: a fresh one per call, made outside
the timing); `head`, read_head over --head_rows random final states; `attention`, chunked_attention
of the model's shape (random q/k/v) over every 2,048-query chunk of --tokens. The outputs are
compared element for element, then --rounds interleaved rounds time each; best wall and CPU seconds
(this process: time other processes held the cores does not count) and this / base.
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


def import_checkout(root: str):
    """jaxeval's api, engine.read and models.attention from the checkout at root, as separate module objects."""
    sys.path.insert(0, os.path.abspath(root))
    for name in [m for m in sys.modules if m.startswith("jaxeval")]:
        del sys.modules[name]
    import jaxeval.api as api
    import jaxeval.engine.read as read
    import jaxeval.models.attention as attention
    from jaxeval.bench.shapes import SHAPES, shape_folder
    sys.path.pop(0)
    for name in [m for m in sys.modules if m.startswith("jaxeval")]:
        del sys.modules[name]
    return api, read, attention, (lambda n: str(shape_folder(n)) if n in SHAPES else n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--base", required=True)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--what", default="chunk,head,attention")
    parser.add_argument("--head_rows", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    what, t, chunk = args.what.split(","), args.tokens, 2048
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    fns = {}
    for tag, root in (("base", args.base), ("this", here)):
        api, read, attention, folder_of = import_checkout(root)
        model = api.load_model(folder_of(args.model), dtype="float32")
        c, p = model.config, model._params
        rng = np.random.RandomState(0)
        if "chunk" in what:
            rope = read.host_rope(c, t)
            ids = jnp.asarray(rng.randint(3, c.vocab_size, (1, chunk)).astype(np.int32))
            shape = (c.num_layers, 1, t, c.num_kv_heads, c.head_dim)

            def run_chunk(read=read, c=c, p=p, rope=rope, ids=ids, shape=shape, backend=model.attention):
                cache = jax.block_until_ready(tuple(jnp.full(shape, 0.01, jnp.float32) for _ in range(2)))
                w, cpu = time.perf_counter(), time.process_time()
                runtime = read.Runtime(attention=backend, dtype="float32")
                out = jax.block_until_ready(read.prefill_chunk(p, *cache, ids, jnp.int32(t - chunk), rope, config=c,
                                                               runtime=runtime))
                return time.perf_counter() - w, time.process_time() - cpu, out
            fns[f"{tag}:chunk"] = run_chunk
        if "head" in what:
            hidden = jax.random.normal(jax.random.key(0), (args.head_rows, c.hidden_size), jnp.float32)
            tokens = jnp.asarray(rng.randint(0, c.vocab_size, (args.head_rows, 1)).astype(np.int32))

            def run_head(read=read, c=c, p=p, hidden=hidden, tokens=tokens):
                w, cpu = time.perf_counter(), time.process_time()
                out = jax.block_until_ready(read.read_head(p, hidden, tokens, config=c))
                return time.perf_counter() - w, time.process_time() - cpu, out
            fns[f"{tag}:head"] = run_head
        if "attention" in what:
            g = np.random.default_rng(0)
            q, k, v = (jnp.asarray(g.standard_normal((1, t, n, c.head_dim)), jnp.float32)
                       for n in (c.num_heads, c.num_kv_heads, c.num_kv_heads))
            attend = jax.jit(lambda q, k, v, s, a=attention: a.chunked_attention(q, k, v, s, jnp.int32(0),
                                                                                 c.head_dim ** -0.5))

            def run_attention(attend=attend, q=q, k=k, v=v):
                w, cpu = time.perf_counter(), time.process_time()
                out = jax.block_until_ready([attend(q[:, s:s + chunk], k, v, jnp.int32(s)) for s in range(0, t, chunk)])
                return time.perf_counter() - w, time.process_time() - cpu, out
            fns[f"{tag}:attention"] = run_attention
    outputs = {name: jax.tree.leaves(f()[2]) for name, f in fns.items()}
    best = {name: [float("inf"), float("inf")] for name in fns}
    for _ in range(args.rounds):
        for name, f in fns.items():
            w, cpu, _ = f()
            best[name] = [min(best[name][0], w), min(best[name][1], cpu)]
    report = {"model": args.model, "tokens": t, "load": list(os.getloadavg()), "pieces": {}}
    for piece in what:
        a, b = outputs[f"base:{piece}"], outputs[f"this:{piece}"]
        report["pieces"][piece] = {
            "base_wall_s": best[f"base:{piece}"][0], "base_cpu_s": best[f"base:{piece}"][1],
            "this_wall_s": best[f"this:{piece}"][0], "this_cpu_s": best[f"this:{piece}"][1],
            "this_over_base_wall": best[f"this:{piece}"][0] / best[f"base:{piece}"][0],
            "this_over_base_cpu": best[f"this:{piece}"][1] / best[f"base:{piece}"][1],
            "identical": all(bool((x == y).all()) for x, y in zip(a, b)),
            "max_abs_diff": max(float(jnp.abs(x - y).max()) for x, y in zip(a, b))}
    print(json.dumps(report, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()
