"""The agent bench's rules configs with and without prefix reuse, in one process: the work each runs
(trunk chunks, padded tokens, cache copies; counted from the plan, not timed) and their times,
interleaved, min of --repeats (wall and process CPU time, the steadier figure on a shared machine).

"Without reuse" is `jaxeval bench`'s: the model without read_many (jaxeval.bench.worker._ReadOnly),
so each distinct sequence is read once, up to its last read position. Default model: the bench's
tiny-llama shape (random weights, the embedded tokenizer).

    python perf/rules_reuse.py --limit 2 --repeats 3 --out perf/results/rules_reuse.json
    python perf/rules_reuse.py --limit 12 --repeats 2 --out perf/results/rules_reuse_limit12.json  # the whole set

planned_work's token_trie is the bound of any reuse (docs/performance_2026-12.md section 7).
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
    """Chunks and padded tokens each path runs, the cache copies reuse makes and the token-grain
    bound (token_trie), for `requests`."""
    from jaxeval.engine.buckets import chunk_size, length_bucket
    from jaxeval.engine.prefix_reuse import _group_shape, _grouped, _Trie, prefix_pieces, run_chunk

    checked, groups = _grouped(config, requests, prefill_chunk)

    def count(into, first, end, chunk):  # a read from first run in chunks of `chunk`: up to the chunk past end
        n = -(-(end - first) // chunk)
        into["chunks"] += n
        into["padded_tokens"] += n * chunk
        into["tokens"] += end - first

    none = {"chunks": 0, "padded_tokens": 0, "tokens": 0}
    for r in checked:
        count(none, 0, r.n_inputs, chunk_size(length_bucket(r.n_inputs), prefill_chunk))
    reuse = {"chunks": 0, "padded_tokens": 0, "tokens": 0, "cache_copies": 0, "shared_prefixes": 0,
             "sharing_groups": sum(len(g) > 1 for g in groups),
             "sequences_sharing": sum(len(g) for g in groups if len(g) > 1)}
    for group in groups:
        if len(group) == 1:
            count(reuse, 0, group[0].n_inputs, chunk_size(length_bucket(group[0].n_inputs), prefill_chunk))
            continue
        _, chunk, grain = _group_shape(config, group, prefill_chunk)
        trie = _Trie(group, grain)
        reuse["shared_prefixes"] += len(trie.shared)
        for depth, above in trie.shared.values():
            for first, end, size in prefix_pieces(trie.shared[above][0] * grain if above != -1 else 0,
                                                  depth * grain, chunk):
                count(reuse, first, end, size)
        reuse["cache_copies"] += sum(n - 1 for node, n in trie.users.items() if node != -1 and n > 1)
        for r in group:
            begin = trie.start[r.index] * grain
            count(reuse, begin, r.n_inputs, run_chunk(begin, -(-r.n_inputs // grain) * grain, chunk))
    return {"no_reuse": none, "reuse": reuse, "token_trie": token_trie(checked),
            "ratio": {k: round(reuse[k] / none[k], 3) for k in ("chunks", "padded_tokens", "tokens")}}


def token_trie(checked) -> dict:
    """The bound of any reuse: the tokens of a trie over every sequence's inputs at the token grain
    (each distinct prefix once, reads allowed anywhere), against the tokens read without reuse."""
    inputs = sorted(tuple(r.ids[:r.n_inputs].tolist()) for r in checked)
    total = sum(len(x) for x in inputs)

    def common(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    tokens = total - sum(common(a, b) for a, b in zip(inputs, inputs[1:]))
    return {"tokens": tokens, "over_no_reuse": round(tokens / total, 3)}


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
