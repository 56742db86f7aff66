"""The agent bench's rules configs with and without prefix reuse, in one process: the work each runs
(trunk chunks, padded tokens, cache copies; counted from the plan, not timed) and their times,
interleaved, min of --repeats (wall and process CPU time, the steadier figure on a shared machine).

"Without reuse" is `jaxeval bench`'s: the model without read_many (jaxeval.bench.worker._ReadOnly),
so each distinct sequence is read once, up to its last read position. Default model: the bench's
tiny-llama shape (random weights, the embedded tokenizer).

    python perf/rules_reuse.py --limit 2 --repeats 3 --out perf/results/rules_reuse.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_step import write_report  # noqa: E402


def planned_work(config, requests, prefill_chunk: int) -> dict:
    """Chunks and padded tokens each path runs, and the cache copies reuse makes, for `requests`."""
    from jaxeval.engine.buckets import chunk_size, length_bucket
    from jaxeval.engine.prefix_reuse import _grouped, _Trie

    checked, groups = _grouped(config, requests, prefill_chunk)

    def alone(n_inputs):
        chunk = chunk_size(length_bucket(n_inputs), prefill_chunk)
        return -(-n_inputs // chunk), chunk

    none = {"chunks": 0, "padded_tokens": 0, "tokens": 0}
    for r in checked:
        n, chunk = alone(r.n_inputs)
        none["chunks"] += n
        none["padded_tokens"] += n * chunk
        none["tokens"] += r.n_inputs
    reuse = {"chunks": 0, "padded_tokens": 0, "tokens": 0, "cache_copies": 0,
             "sharing_groups": sum(len(g) > 1 for g in groups), "sequences_sharing": sum(len(g) for g in groups
                                                                                         if len(g) > 1)}
    for group in groups:
        if len(group) == 1:
            n, chunk = alone(group[0].n_inputs)
            reuse["chunks"] += n
            reuse["padded_tokens"] += n * chunk
            reuse["tokens"] += group[0].n_inputs
            continue
        chunk = chunk_size(length_bucket(max(r.n_inputs for r in group)), prefill_chunk)
        trie = _Trie(group, chunk)
        shared, users = trie.shared, trie.users
        for depth, above in shared.values():
            n = depth - (shared[above][0] if above != -1 else 0)
            reuse["chunks"] += n
            reuse["padded_tokens"] += n * chunk
            reuse["tokens"] += n * chunk
        reuse["cache_copies"] += sum(n - 1 for node, n in users.items() if node != -1 and n > 1)
        for r in group:
            start = trie.start[r.index]
            n = -(-(r.n_inputs - start * chunk) // chunk)
            reuse["chunks"] += n
            reuse["padded_tokens"] += n * chunk
            reuse["tokens"] += r.n_inputs - start * chunk
    return {"no_reuse": none, "reuse": reuse,
            "ratio": {k: round(reuse[k] / none[k], 3) for k in ("chunks", "padded_tokens", "tokens")}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny-llama", help="a `jaxeval bench` shape name or a model folder")
    parser.add_argument("--limit", type=int, default=2, help="first N items of each of rules_en/cs/de (8k)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    from jaxeval.api import load_model
    from jaxeval.bench.shapes import SHAPES, shape_folder
    from jaxeval.bench.worker import _ReadOnly
    from jaxeval.benchmarks.agent_bench import load_split
    from jaxeval.benchmarks.agent_bench.defaults import EMBEDDED_AGENT_DATA
    from jaxeval.benchmarks.agent_bench.rules_run import run_rules

    folder = shape_folder(args.model) if args.model in SHAPES else Path(args.model)
    model = load_model(folder, dtype="float32")
    items = {(config, "8k"): load_split(EMBEDDED_AGENT_DATA, config, "8k")[:args.limit]
             for config in ("rules_en", "rules_cs", "rules_de")}

    captured = {}

    class Planner:  # records the requests read_many would get, runs nothing
        max_length = model.max_length

        def read_many(self, requests, *, batch_size=1, share_prefixes=True):
            captured["requests"] = requests
            raise StopIteration

    try:
        run_rules(Planner(), model.tokenizer, items, "text")
    except StopIteration:
        pass
    work = planned_work(model.config, captured["requests"], model.prefill_chunk)

    variants = {"reuse": model, "no_reuse": _ReadOnly(model)}
    times = {clock: {name: math.inf for name in variants} for clock in ("wall", "cpu")}
    tokens = {}
    for name, backend in variants.items():  # first calls: compiles
        tokens[name] = run_rules(backend, model.tokenizer, items, "text")["tokens"]
    for _ in range(args.repeats):
        for name, backend in variants.items():
            wall, cpu = time.perf_counter(), time.process_time()
            run_rules(backend, model.tokenizer, items, "text")
            times["wall"][name] = min(times["wall"][name], time.perf_counter() - wall)
            times["cpu"][name] = min(times["cpu"][name], time.process_time() - cpu)
    report = {"command": "python perf/rules_reuse.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "model": args.model, "limit": args.limit, "repeats": args.repeats, "prefill_chunk": model.prefill_chunk,
              "tokens": tokens, "planned_work": work,
              "seconds": {clock: {k: round(v, 3) for k, v in t.items()} for clock, t in times.items()},
              "reuse_over_no_reuse": {clock: round(t["reuse"] / t["no_reuse"], 3) for clock, t in times.items()}}
    print(json.dumps(report, indent=1))
    write_report(report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
