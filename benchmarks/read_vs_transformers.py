"""Peak memory and speed of jaxeval's teacher-forced read against a transformers forward, same run.

    python benchmarks/read_vs_transformers.py [--out FILE.json] [--long 32768] [--short 8192]

Builds the issue's 57M-parameter Llama (hidden 512, intermediate 1536, 8 layers, 8 heads, 2 KV
heads, vocab 32,000, float32) with transformers, saves it with save_pretrained, then runs each
measurement in a fresh subprocess so peak RSS belongs to one measurement only:
  - memory: read of `--long` tokens (every position read) vs transformers' full-logits read;
  - speed: read of `--short` tokens vs transformers' forward (median of 3 after a warm-up).
Figures are printed and written as JSON, as ratios against the transformers baseline.
Needs torch (CPU build: pip install torch==2.13.0).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

CONFIG = dict(vocab_size=32000, hidden_size=512, intermediate_size=1536, num_hidden_layers=8,
              num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=65536, rope_theta=500000.0)


def build_model(folder: str) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**CONFIG)).save_pretrained(folder)


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _ids(n: int):
    import numpy as np

    return np.random.RandomState(0).randint(0, CONFIG["vocab_size"], size=n).astype(np.int32)


def measure_jaxeval(folder: str, n: int, repeats: int) -> dict:
    import numpy as np

    import jaxeval

    model = jaxeval.load_model(folder, dtype="float32")
    ids = _ids(n)
    positions = np.arange(1, n)
    times = []
    for _ in range(repeats + 1):  # the first call compiles
        t0 = time.perf_counter()
        result = model.read(ids, positions, ids[positions])
        times.append(time.perf_counter() - t0)
    assert np.isfinite(result.logprobs).all()
    return {"seconds": sorted(times[1:])[len(times[1:]) // 2] if repeats else times[0],
            "compile_and_run_s": times[0], "peak_rss_mb": _peak_rss_mb()}


def measure_transformers(folder: str, n: int, repeats: int) -> dict:
    import torch
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = torch.from_numpy(_ids(n)).long()[None]
    times = []
    with torch.no_grad():
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            logits = model(ids).logits  # [1, n, vocab]: the full-logits read
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            picked = logprobs[0, :-1].gather(-1, ids[0, 1:, None])
            times.append(time.perf_counter() - t0)
    assert torch.isfinite(picked).all()
    return {"seconds": sorted(times[1:])[len(times[1:]) // 2] if repeats else times[0],
            "peak_rss_mb": _peak_rss_mb()}


def _child(kind: str, folder: str, n: int, repeats: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, folder, str(n), str(repeats)],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{kind} at {n} tokens failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--long", type=int, default=32768)
    parser.add_argument("--short", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, folder, n, repeats = args.child
        fn = measure_jaxeval if kind == "jaxeval" else measure_transformers
        print(json.dumps(fn(folder, int(n), int(repeats))))
        return

    with tempfile.TemporaryDirectory() as folder:
        build_model(folder)
        mem_j = _child("jaxeval", folder, args.long, 0)
        mem_t = _child("transformers", folder, args.long, 0)
        speed_j = _child("jaxeval", folder, args.short, args.repeats)
        speed_t = _child("transformers", folder, args.short, args.repeats)
    report = {
        "model": CONFIG,
        "memory": {"tokens": args.long, "jaxeval_peak_rss_mb": round(mem_j["peak_rss_mb"]),
                   "transformers_peak_rss_mb": round(mem_t["peak_rss_mb"]),
                   "ratio": round(mem_j["peak_rss_mb"] / mem_t["peak_rss_mb"], 3)},
        "speed": {"tokens": args.short, "jaxeval_s": round(speed_j["seconds"], 3),
                  "jaxeval_first_call_s": round(speed_j["compile_and_run_s"], 3),
                  "transformers_s": round(speed_t["seconds"], 3),
                  "ratio": round(speed_j["seconds"] / speed_t["seconds"], 3)},
    }
    print(json.dumps(report, indent=2))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
