"""Teacher-forced read of a random-weight 8B-shaped Llama in bfloat16 on one accelerator chip.

    python perf/gpu_read.py [--attention cudnn,chunked] [--out DIR]      # on the GPU machine
    python perf/gpu_read.py --dry_run --out /tmp/x                         # toy shapes, any CPU

Measures, for each attention backend in --attention:
  - read_32768_<attention>: read() of 32,768 tokens, every position read: first call (compile + run) and a
    second, timed call; tokens/s and MFU = model FLOPs / seconds / peak FLOP/s of the chip;
  - read_131072_<attention>: one read() of 131,072 tokens (does it fit and run on one chip; its time and MFU);
  - agreement_<tokens>: max and mean |d log p| between the backends' reads of the same tokens (cudnn against
    chunked: cuDNN's flash attention, its parts merged by cuDNN's float32 log-sum-exps, against jaxeval's
    float32 online softmax; with jax.nn's bfloat16-rounded log-sum-exps the merges added up to 3% per weight);
  - generate_batch<B>: greedy generate() of --new_tokens after --prompt_tokens random tokens at batch 1 and 8
    (first call, then a timed one): new tokens/s.
Model FLOPs (jaxeval.plan.flops.read_flops, as `jaxeval bench` counts them): the matmuls of the
trunk (2 per weight per token), causal attention (QK^T and PV over the lower triangle:
2 * T * (T + 1) * heads * head_dim per layer) and the LM head at the read positions; padding to
length buckets is not counted. Device peak memory comes from
memory_stats() where the platform has it (the process's peak so far). A failing measurement (out of memory, a backend
missing on the platform) is recorded with its error and the rest still run.
Writes gpu_read.json into --out (default: $OUT, else the current folder).
"""

from __future__ import annotations

import argparse
import json
import os
import time

from jaxeval.bench.shapes import SHAPES
from jaxeval.plan.flops import read_flops  # the FLOP count `jaxeval bench` reports

LLAMA_8B = SHAPES["llama-8b"][0]
TOY = LLAMA_8B | dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=2048)
PEAK_TFLOPS = {"H200": 989.0, "H100": 989.0, "A100": 312.0}  # dense bfloat16 per chip (SXM)


def peak_memory_gb(device) -> float | None:
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    return round(stats["peak_bytes_in_use"] / 2 ** 30, 2) if stats and "peak_bytes_in_use" in stats else None


def measure(params, config, dtype, tokens: int, attention: str, repeats: int, peak_tflops: float | None) -> dict:
    import numpy as np

    import jax.numpy as jnp

    from jaxeval.engine.read import read
    from jaxeval.engine.runtime import Runtime

    runtime = Runtime(attention=attention, dtype=jnp.dtype(dtype).name)
    ids = np.random.RandomState(0).randint(0, config.vocab_size, size=tokens).astype(np.int32)
    positions = np.arange(1, tokens)
    times = []
    for _ in range(1 + repeats):  # the first call compiles
        t0 = time.perf_counter()
        result = read(params, config, runtime, ids, positions, ids[positions])
        times.append(time.perf_counter() - t0)
    seconds = min(times[1:]) if repeats else times[0]
    flops = read_flops(config, tokens, positions.size)["total"]
    entry = {"tokens": tokens, "attention": attention, "first_call_s": round(times[0], 3), "seconds": round(seconds, 3),
             "timed_call_includes_compile": not repeats, "tokens_per_s": round(tokens / seconds, 1),
             "model_flops": flops,
             "mfu": float(f"{flops / seconds / (peak_tflops * 1e12):.4g}") if peak_tflops else None,
             "finite": bool(np.isfinite(result.logprobs).all()), "mean_logprob": float(np.mean(result.logprobs))}
    return entry, np.asarray(result.logprobs, np.float64)


def agreement(logprobs: dict) -> dict:
    """|d log p| between the first backend's read and each other's, of the same tokens."""
    import numpy as np

    (first, base), *others = logprobs.items()
    return {f"{name}_vs_{first}": {"max_abs": float(np.abs(lp - base).max()), "mean_abs": float(np.abs(lp - base).mean())}
            for name, lp in others}


def measure_generate(params, config, batch: int, prompt_tokens: int, new_tokens: int, attention: str) -> dict:
    import numpy as np

    from jaxeval.engine.generate import generate
    from jaxeval.engine.runtime import Runtime

    rng = np.random.RandomState(batch)
    prompts = [rng.randint(0, config.vocab_size, size=prompt_tokens).tolist() for _ in range(batch)]
    times = []
    for _ in range(2):  # the first call compiles
        t0 = time.perf_counter()
        runtime = Runtime(attention=attention, dtype=params["embed"].dtype.name)
        out = generate(params, config, runtime, prompts, new_tokens, eos_token_ids=[], batch_size=batch)
        times.append(time.perf_counter() - t0)
    made = sum(len(o.tokens) for o in out)
    return {"batch": batch, "prompt_tokens": prompt_tokens, "new_tokens": new_tokens, "attention": attention,
            "first_call_s": round(times[0], 3), "seconds": round(times[1], 3),
            "new_tokens_per_s": round(made / times[1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attention", default="cudnn,chunked", help="comma-separated backends to measure")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--peak_tflops", type=float, default=None, help="chip peak (default: from the device kind)")
    parser.add_argument("--dry_run", action="store_true", help="toy model, 512/1024 tokens, float32, chunked")
    parser.add_argument("--prompt_tokens", type=int, default=2048, help="generation: prompt length")
    parser.add_argument("--new_tokens", type=int, default=128, help="generation: greedy tokens per prompt")
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jaxeval.models.config import config_from_hf
    from jaxeval.models.decoder import Decoder

    device = jax.devices()[0]
    raw, dtype, lengths = (TOY, jnp.float32, (512, 1024)) if args.dry_run else (LLAMA_8B, jnp.bfloat16, (32768, 131072))
    attentions = ["chunked", "xla"] if args.dry_run else args.attention.split(",")
    prompt_tokens, new_tokens = (64, 8) if args.dry_run else (args.prompt_tokens, args.new_tokens)
    peak = args.peak_tflops or next((v for k, v in PEAK_TFLOPS.items() if k in device.device_kind), None)
    config = config_from_hf(raw, where="benchmark config")
    t0 = time.perf_counter()
    params = Decoder(config, dtype=dtype, rngs=nnx.Rngs(0)).params()  # random weights, made on the device
    jax.block_until_ready(params)
    report = {"device": device.device_kind, "platform": device.platform, "jax": jax.__version__,
              "dry_run": args.dry_run, "dtype": jnp.dtype(dtype).name, "model": raw, "peak_tflops": peak,
              "parameters": int(sum(x.size for x in jax.tree.leaves(params))),
              "init_s": round(time.perf_counter() - t0, 2), "runs": {}}
    def record(key, run):  # one failing measurement (out of memory, a backend missing) never stops the rest
        try:
            report["runs"][key] = run()
        except Exception as e:
            report["runs"][key] = {"error": f"{type(e).__name__}: {str(e)[:2000]}"}
        report["runs"][key]["peak_device_memory_gb"] = peak_memory_gb(device)
        print(key, json.dumps(report["runs"][key]), flush=True)
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "gpu_read.json"), "w") as f:  # rewritten after every run
            json.dump(report, f, indent=2)

    logprobs: dict[int, dict[str, object]] = {}
    for attention in attentions:
        for tokens, repeats in ((lengths[0], 1), (lengths[1], 0)):
            def run(tokens=tokens, repeats=repeats, attention=attention):
                entry, lp = measure(params, config, dtype, tokens, attention, repeats, peak)
                logprobs.setdefault(tokens, {})[attention] = lp
                return entry
            record(f"read_{tokens}_{attention}", run)
    for tokens, by_backend in logprobs.items():
        if len(by_backend) > 1:
            record(f"agreement_{tokens}", lambda by_backend=by_backend: agreement(by_backend))
    for batch in (1, 8):
        record(f"generate_batch{batch}",
               lambda batch=batch: measure_generate(params, config, batch, prompt_tokens, new_tokens, attentions[0]))
    print(f"wrote {os.path.join(args.out, 'gpu_read.json')}")


if __name__ == "__main__":
    main()
