"""Peak memory and time of a 131,072-token teacher-forced read on CPU, against a baseline in the same run.

    python perf/long_read_memory.py [--long 131072] [--base 8192] [--attention chunked] [--model llama|qwen3_5]
                                          [--out perf/results/long_read_memory.json]

The model is issue 3's small random Llama (hidden 128, intermediate 384, 2 layers, 2 heads,
1 KV head, vocab 32,000, float32), or with --model qwen3_5 a small random Qwen3.5 hybrid (8 layers:
twice three Gated DeltaNet layers and one gated full-attention layer, hidden 128), built in memory
from a fixed seed. Each measurement runs in
a fresh subprocess, so its peak RSS (getrusage ru_maxrss) belongs to that measurement alone:
  - idle: import jax + jaxeval and build the model, no read (the fixed cost);
  - base: read() of `--base` tokens, every position read;
  - long: read() of `--long` tokens, every position read.
Wall time and CPU time (user + system, all threads) both include compilation.
Figures are written as JSON with ratios against the baseline; the target is long peak RSS < 2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CONFIG = dict(model_type="llama", vocab_size=32000, hidden_size=128, intermediate_size=384, num_hidden_layers=2,
              num_attention_heads=2, num_key_value_heads=1, head_dim=64, max_position_embeddings=262144,
              rms_norm_eps=1e-5, hidden_act="silu", tie_word_embeddings=False,
              rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
QWEN3_5 = dict(model_type="qwen3_5_text", vocab_size=32000, hidden_size=128, intermediate_size=384,
               num_hidden_layers=8, num_attention_heads=2, num_key_value_heads=1, head_dim=64,
               linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=32, linear_value_head_dim=32,
               linear_conv_kernel_dim=4, max_position_embeddings=262144, rms_norm_eps=1e-6, tie_word_embeddings=False,
               rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25})
MODELS = {"llama": CONFIG, "qwen3_5": QWEN3_5}
LIMIT_MB = 2048


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _cpu_seconds() -> float:
    """User + system CPU time of this process (all threads): less sensitive to a busy machine than wall time."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(n: int, attention: str, model: str = "llama") -> dict:
    """One measurement (run in its own process): build the model, read n tokens (0: no read)."""
    import jax
    import numpy as np
    from flax import nnx

    from jaxeval.engine.read import read
    from jaxeval.engine.runtime import Runtime
    from jaxeval.models.config import config_from_hf
    from jaxeval.models.decoder import Decoder
    from jaxeval.models.hybrid import HybridDecoder
    from jaxeval.models.hybrid_layout import is_hybrid

    config = config_from_hf(MODELS[model], where="benchmark config")
    params = (HybridDecoder if is_hybrid(config) else Decoder)(config, rngs=nnx.Rngs(0)).params()
    jax.block_until_ready(params)
    if n == 0:
        return {"tokens": 0, "seconds": 0.0, "cpu_seconds": 0.0, "peak_rss_mb": _peak_rss_mb()}
    ids = np.random.RandomState(0).randint(0, config.vocab_size, size=n).astype(np.int32)
    positions = np.arange(1, n)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    result = read(params, config, Runtime(attention=attention, dtype="float32"), ids, positions, ids[positions])
    seconds, cpu_seconds = time.perf_counter() - t0, _cpu_seconds() - c0  # include compilation: one read each
    assert np.isfinite(result.logprobs).all() and result.logprobs.shape == (n - 1,)
    return {"tokens": n, "seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_mb": _peak_rss_mb(),
            "mean_logprob": float(np.mean(result.logprobs))}


def _child(n: int, attention: str, model: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(n), attention, model], capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"read of {n} tokens failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", type=int, default=131072)
    parser.add_argument("--base", type=int, default=8192)
    parser.add_argument("--attention", default="chunked")
    parser.add_argument("--model", default="llama", choices=sorted(MODELS))
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(int(args.child[0]), args.child[1], args.child[2])))
        return

    load_before = os.getloadavg()
    idle = _child(0, args.attention, args.model)
    base = _child(args.base, args.attention, args.model)
    long = _child(args.long, args.attention, args.model)
    report = {
        "model": MODELS[args.model], "attention": args.attention, "cpu_count": os.cpu_count(),
        "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
        "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
        "idle_peak_rss_mb": round(idle["peak_rss_mb"]),
        "base": {"tokens": args.base, "peak_rss_mb": round(base["peak_rss_mb"]), "seconds": round(base["seconds"], 1),
                 "cpu_seconds": round(base["cpu_seconds"], 1)},
        "long": {"tokens": args.long, "peak_rss_mb": round(long["peak_rss_mb"]), "seconds": round(long["seconds"], 1),
                 "cpu_seconds": round(long["cpu_seconds"], 1)},
        "ratios": {"tokens": round(args.long / args.base, 2),
                   "peak_rss": round(long["peak_rss_mb"] / base["peak_rss_mb"], 3),
                   "peak_rss_above_idle": round((long["peak_rss_mb"] - idle["peak_rss_mb"])
                                                / max(base["peak_rss_mb"] - idle["peak_rss_mb"], 1.0), 3),
                   "seconds": round(long["seconds"] / base["seconds"], 2),
                   "cpu_seconds": round(long["cpu_seconds"] / base["cpu_seconds"], 2)},
        "long_under_2gb": long["peak_rss_mb"] < LIMIT_MB,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)
    if not report["long_under_2gb"]:
        sys.exit(f"peak RSS {long['peak_rss_mb']:.0f} MB at {args.long} tokens is over {LIMIT_MB} MB")


if __name__ == "__main__":
    main()
