"""The read and one layer's attention against transformers', all four in one process.

    python perf/read_gap.py llama-57m [--tokens 8192] [--rounds 3] [--out FILE.json]
    python perf/read_gap.py ~/.cache/jaxeval/real_models/smollm2-135m --tokens 8192 --rounds 2

Four sides timed in interleaved rounds (best wall and CPU seconds of this process each), so a shared
machine's slow moments hit every side alike, where `jaxeval bench` times its two sides in two processes:
- `jaxeval read` and `transformers read`: the bench's own read of each side (jaxeval.bench.worker's
  JaxevalSide.read and TransformersSide.read: random ids, every position's log-prob), float32;
- `jaxeval attention` and `torch attention`: one layer's causal attention over the whole read at the
  model's shape (perf/attention_profile.attention_sides: the engine's chunk-by-chunk chunked_attention
  against the cache, and transformers' SDPA call).
Reported: both ratios, wall and CPU. The attention sides are the attention alone, outside the model: the
read's own split is not measured (in this process the standalone attention times the layers can exceed
the whole read, so no share of the read is derived from them). Models with sliding-window or soft-capped
attention are refused (one layer does not stand for all).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from attention_profile import attention_sides, best_of  # noqa: E402
from decode_step import write_report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a jaxeval bench shape name or a HF safetensors folder")
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prefill_chunk", type=int, default=2048)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from jaxeval.bench.cli import resolve_model
    from jaxeval.bench.worker import JaxevalSide, TransformersSide
    from jaxeval.errors import JaxevalError
    from jaxeval.models.config import config_from_hf

    try:
        name, folder, raw = resolve_model(args.model)
        config = config_from_hf(raw, where=str(folder / "config.json"))
    except JaxevalError as e:
        raise SystemExit(str(e))
    if any(config.layer_windows) or config.attn_logit_softcap:
        raise SystemExit(f"{name}: sliding-window or soft-capped attention: one layer's attention does not "
                         "stand for every layer's; this comparison is for full causal attention")
    options = {"dtype": "float32", "attention": "chunked", "prefill_chunk": args.prefill_chunk}
    load_before = list(os.getloadavg())
    ours, theirs = JaxevalSide(str(folder), options), TransformersSide(str(folder), options)
    attention = attention_sides(args.tokens, config.num_heads, config.num_kv_heads, config.head_dim,
                                args.prefill_chunk)
    fns = {"jaxeval read": lambda: ours.read(args.tokens), "transformers read": lambda: theirs.read(args.tokens),
           "jaxeval attention": attention["jaxeval"], "torch attention": attention["torch"]}
    best = best_of(fns, args.rounds)
    wall = {side: best[side][0] for side in fns}
    cpu = {side: best[side][1] for side in fns}

    def ratios(t: dict) -> dict:
        return {"read": t["jaxeval read"] / t["transformers read"],
                "attention": t["jaxeval attention"] / t["torch attention"]}

    report = {"model": name, "tokens": args.tokens, "layers": config.num_layers, "rounds": args.rounds,
              "command": "python " + " ".join(sys.argv), "load_before": load_before, "load_after": list(os.getloadavg()),
              "jaxeval": ours.info, "transformers": theirs.info, "wall_s": wall, "cpu_s": cpu,
              "ratio_wall": ratios(wall), "ratio_cpu": ratios(cpu)}
    import json

    print(json.dumps(report, indent=1))
    write_report(report, args.out)


if __name__ == "__main__":
    main()
