"""Where a read's gap to transformers lies: both reads, with and without their attention, in one process.

    python perf/read_gap.py llama-57m [--tokens 8192] [--rounds 3] [--out FILE.json]
    python perf/read_gap.py ~/.cache/jaxeval/real_models/smollm2-135m --tokens 8192 --rounds 2

Four sides timed in interleaved rounds (best wall and CPU seconds of this process each), so this
machine's slow minutes hit every side alike (`jaxeval bench` times its two sides in two processes):
- `jaxeval read` and `transformers read`: the bench's own read of each side (jaxeval.bench.worker's
  JaxevalSide.read and TransformersSide.read: random ids, every position's log-prob), float32;
- `jaxeval without attention` and `transformers without attention`: the same reads with every layer's
  attention replaced by its queries (the attention output is the query, [B, T, H, hd]): jaxeval through an
  attention backend "none" added to jaxeval.models.attention.REGISTRY here, transformers through an
  attention function "none" registered with its AttentionInterface. Everything else (projections, rotary,
  the KV cache writes, norms, MLPs, the head, the log-probs) runs as in the read.
Reported: each side's seconds, the attention's share of each read (read - without), and the ratios
jaxeval / transformers of the read, of its attention and of the rest. Both "without" sides compute the
same function, so their log-probs agree (tests/perf/test_read_gap.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_profile import best_of  # noqa: E402
from decode_step import write_report  # noqa: E402


def _queries(q, k, v, *args, **kwargs):
    return q


def _torch_queries(module, query, key, value, attention_mask, **kwargs):
    return query.transpose(1, 2).contiguous(), None  # [B, H, T, hd] -> transformers' [B, T, H, hd]


def register_no_attention() -> None:
    """The "none" attention on both sides (idempotent)."""
    from transformers import AttentionInterface

    from jaxeval.models.attention import REGISTRY, AttentionBackend

    REGISTRY.setdefault("none", AttentionBackend("none", ("cpu", "gpu", "tpu"), True, True, None,
                                                 build=lambda config, mesh: _queries, reads_cache_layer=True,
                                                 about="perf/read_gap.py: the attention output is the query"))
    AttentionInterface.register("none", _torch_queries)


def sides(folder: Path, prefill_chunk: int):
    """(jaxeval side, transformers side, use, {name: (tokens) -> read result}) for the four sides; use(attention)
    switches both models between their own attention (True) and "none" (False)."""
    from jaxeval.bench.worker import JaxevalSide, TransformersSide

    register_no_attention()
    options = {"dtype": "float32", "attention": "chunked", "prefill_chunk": prefill_chunk}
    ours, theirs = JaxevalSide(str(folder), options), TransformersSide(str(folder), options)
    runtimes = {True: ours.model.runtime, False: dataclasses.replace(ours.model.runtime, attention="none")}
    implementations = {True: theirs.model.config._attn_implementation, False: "none"}

    def use(attention: bool) -> None:
        ours.model.runtime = runtimes[attention]
        theirs.model.set_attn_implementation(implementations[attention])

    def read(side, attention: bool):
        def run(tokens: int):
            use(attention)
            return side.read(tokens)
        return run

    return ours, theirs, use, {"jaxeval read": read(ours, True), "jaxeval without attention": read(ours, False),
                               "transformers read": read(theirs, True),
                               "transformers without attention": read(theirs, False)}


def split(t: dict) -> dict:
    """Seconds per side -> the attention and the rest of each read, and jaxeval / transformers ratios."""
    attention = {s: t[f"{s} read"] - t[f"{s} without attention"] for s in ("jaxeval", "transformers")}
    return {"attention_s": attention,
            "ratio": {"read": t["jaxeval read"] / t["transformers read"],
                      "attention": attention["jaxeval"] / attention["transformers"],
                      "rest": t["jaxeval without attention"] / t["transformers without attention"]},
            "gap_s": {"read": t["jaxeval read"] - t["transformers read"],
                      "attention": attention["jaxeval"] - attention["transformers"],
                      "rest": t["jaxeval without attention"] - t["transformers without attention"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a jaxeval bench shape name or a HF safetensors folder")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prefill_chunk", type=int, default=2048)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from jaxeval.bench.cli import resolve_model
    from jaxeval.errors import JaxevalError
    from jaxeval.io.outputs import check_output_file

    try:
        if args.out:
            check_output_file(args.out)  # before minutes of measuring, not after
        name, folder, _ = resolve_model(args.model)
    except JaxevalError as e:
        raise SystemExit(str(e))
    load_before = list(os.getloadavg())
    ours, theirs, _, fns = sides(folder, args.prefill_chunk)
    best = best_of({side: (lambda f=f: f(args.tokens)) for side, f in fns.items()}, args.rounds)
    wall = {side: best[side][0] for side in fns}
    cpu = {side: best[side][1] for side in fns}
    report = {"model": name, "tokens": args.tokens, "rounds": args.rounds, "command": "python " + " ".join(sys.argv),
              "load_before": load_before, "load_after": list(os.getloadavg()), "jaxeval": ours.info,
              "transformers": theirs.info, "wall_s": wall, "cpu_s": cpu, "wall": split(wall), "cpu": split(cpu)}
    print(json.dumps(report, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()
