"""Analytic read times on the named accelerators: the FLOPs a read needs at a stated MFU of each chip's peak.

Issue 18's TPU figure (v5e, v5p, v6e; the GPUs of jaxeval.plan.hardware too), from the same FLOP count
the measured runs use (jaxeval.plan.flops.read_flops: causal attention, head at the read rows) and the
same rates `jaxeval plan --accelerator` applies. Memory per chip is the weights plus the read's KV cache
(one sequence), as jaxeval.plan.cost counts them; activations and XLA's workspace are left out.
"""

from __future__ import annotations

from jaxeval.plan.cost import kv_bytes, weight_bytes
from jaxeval.plan.flops import read_flops
from jaxeval.plan.hardware import ACCELERATORS, DEFAULT_MFU


def read_estimates(config, tokens: int, dtype: str = "bfloat16", mfu: float = DEFAULT_MFU) -> dict:
    """One read of `tokens` tokens (every position read): seconds and memory on one chip of each kind."""
    flops = read_flops(config, tokens - 1, tokens - 1)
    weights, kv = weight_bytes(config, dtype, None, 0), kv_bytes(config, 1, tokens, dtype)
    chips = {}
    for name, (peak, hbm, bandwidth, _) in ACCELERATORS.items():
        seconds = max(flops["total"] / (peak * mfu), weights / bandwidth)  # never faster than one pass over the weights
        chips[name] = {"seconds": seconds, "tokens_per_s": tokens / seconds, "fits_one_chip": weights + kv <= hbm,
                       "memory_gb": (weights + kv) / 2 ** 30, "hbm_gb": hbm / 2 ** 30}
    return {"tokens": tokens, "dtype": dtype, "mfu": mfu, "flops": flops, "weights_bytes": weights, "kv_bytes": kv,
            "chips": chips}


def table(estimates: list[dict], model: str) -> str:
    lines = [f"analytic read estimates: {model}, {estimates[0]['dtype']}, MFU {estimates[0]['mfu']} of each chip's "
             "bf16 peak (jaxeval.plan.hardware)", f"{'tokens':>8} {'TFLOPs':>9} " + "".join(
                 f"{name:>14}" for name in ACCELERATORS)]
    for e in estimates:
        cells = "".join(f"{c['seconds']:>10.2f} s{'' if c['fits_one_chip'] else '*':<2}" for c in e["chips"].values())
        lines.append(f"{e['tokens']:>8} {e['flops']['total'] / 1e12:>9.1f} {cells}")
    if any(not c["fits_one_chip"] for e in estimates for c in e["chips"].values()):
        lines.append("* weights + KV cache exceed one chip's HBM: shard over a mesh (jaxeval plan --mesh ...)")
    return "\n".join(lines)
