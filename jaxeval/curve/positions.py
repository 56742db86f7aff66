"""Read a text at every position and reduce per position bucket.

Position p (1 <= p < n) is the prediction of ids[p] after ids[:p]. Bucket b holds the positions
[b * width, (b + 1) * width) (position 0 has no prediction), and reports their count, mean
log-probability of the text's token and top-1 rate; with a reference, also the mean KL(reference
|| model) in nats, the top-1 agreement of the two models and the reference's own top-1 rate.
"""

from __future__ import annotations

import numpy as np


def read_positions(model, ids: list[int], reference=None) -> dict[str, np.ndarray]:
    """{"logprob", "top1"[, "ref_top1", "agree", "kl"]} float32 [n - 1] over positions 1 .. n - 1."""
    ids_array = np.asarray(ids, np.int32)
    positions = np.arange(1, len(ids), dtype=np.int32)
    if reference is None:
        result = model.read(ids_array, positions, ids_array[positions])
        return {"logprob": np.asarray(result.logprobs, np.float32),
                "top1": (np.asarray(result.top1) == ids_array[positions]).astype(np.float32)}
    return model.compare(reference, ids_array, positions)


def bucket_stats(values: dict[str, np.ndarray], width: int) -> list[dict]:
    if width < 1:
        raise ValueError(f"bucket width must be positive, got {width}")
    positions = np.arange(1, len(values["logprob"]) + 1)
    buckets = []
    for start in range(0, int(positions[-1]) + 1, width):
        mask = (positions >= start) & (positions < start + width)
        if not mask.any():
            continue
        row = {"start": start, "end": min(start + width, int(positions[-1]) + 1), "positions": int(mask.sum()),
               "mean_logprob": float(values["logprob"][mask].mean()), "top1_rate": float(values["top1"][mask].mean())}
        if "kl" in values:
            row.update(mean_kl=float(values["kl"][mask].mean()), max_kl=float(values["kl"][mask].max()),
                       top1_agreement=float(values["agree"][mask].mean()),
                       reference_top1_rate=float(values["ref_top1"][mask].mean()))
        buckets.append(row)
    return buckets


def overall(values: dict[str, np.ndarray]) -> dict:
    out = {"positions": int(len(values["logprob"])), "mean_logprob": float(values["logprob"].mean()),
           "top1_rate": float(values["top1"].mean())}
    if "kl" in values:
        out.update(mean_kl=float(values["kl"].mean()), top1_agreement=float(values["agree"].mean()),
                   reference_top1_rate=float(values["ref_top1"].mean()))
    return out
