"""Short items batched vs one at a time: teacher-forced reads and greedy generation on the embedded model.

    python perf/batched_short_items.py [--items 16] [--batch_size 8] [--repeats 3] [--out FILE.json]

Builds --items random texts of 300-500 tokens (all on the 512 rung) and reads every one with
16 read positions, one read() per text and then read_many(batch_size) over all of them; then
greedy-generates 16 tokens after prompts of the same lengths, batch_size 1 and batch_size N.
Each pair runs once to compile, then --repeats times interleaved; reported: median seconds of
each, the ratio one-at-a-time / batched, the largest |Δ log-prob| and whether the generated
tokens are equal, and the executables each jitted entry point holds (compile counts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--items", type=int, default=16)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--new_tokens", type=int, default=16)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    import jax

    import jaxeval
    from jaxeval.engine.compiles import compile_counts

    model = jaxeval.load_model(ROOT / "jaxeval" / "assets" / "tiny_llama", dtype="float32", load_tokenizer=False)
    rng = np.random.default_rng(0)
    lengths = rng.integers(300, 500, args.items)
    texts = [rng.integers(1, model.config.vocab_size, int(n)) for n in lengths]
    requests = []
    for ids in texts:
        positions = np.sort(rng.choice(np.arange(1, ids.size), 16, replace=False)).astype(np.int32)
        requests.append((ids, positions, ids[positions]))

    def reads_alone():
        return [model.read(*r) for r in requests]

    def reads_batched():
        return model.read_many(requests, batch_size=args.batch_size, share_prefixes=False).results

    prompts = [t[:n - args.new_tokens].tolist() for t, n in zip(texts, lengths)]

    def generate_alone():
        return model.generate(prompts, args.new_tokens, batch_size=1)

    def generate_batched():
        return model.generate(prompts, args.new_tokens, batch_size=args.batch_size)

    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        jax.block_until_ready([getattr(o, "logprobs", None) for o in out])
        return time.perf_counter() - t0, out

    report = {"model": "jaxeval/assets/tiny_llama (the embedded trained tiny Llama, float32)", "items": args.items,
              "lengths": [int(n) for n in lengths], "batch_size": args.batch_size, "device": str(jax.devices()[0])}
    for name, alone, batched in (("read", reads_alone, reads_batched), ("generate", generate_alone, generate_batched)):
        first_alone, out_alone = timed(alone)  # compiles
        first_batched, out_batched = timed(batched)
        times = {"alone": [], "batched": []}
        for _ in range(args.repeats):
            times["alone"].append(timed(alone)[0])
            times["batched"].append(timed(batched)[0])
        a, b = statistics.median(times["alone"]), statistics.median(times["batched"])
        entry = {"first_call_s": {"alone": first_alone, "batched": first_batched},
                 "median_s": {"alone": a, "batched": b}, "alone_over_batched": a / b, "runs_s": times}
        if name == "read":
            entry["max_abs_logprob_diff"] = float(max(np.max(np.abs(x.logprobs - y.logprobs))
                                                      for x, y in zip(out_alone, out_batched)))
        else:
            entry["tokens_equal"] = [g.tokens for g in out_alone] == [g.tokens for g in out_batched]
        report[name] = entry
    report["executables"] = compile_counts()  # per engine entry point: one per shape bucket met
    print(json.dumps(report, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
