"""lm-evaluation-harness's reading of a results file: `results_lm_eval` (docs/results_schema.md).

lm-eval keys a task's metrics as "<metric>,<filter>" and puts "<metric>_stderr,<filter>" beside
each; jaxeval has no filters, so every metric is "<metric>,none". The view is derived from
`results` (which keeps jaxeval's own names) when the results file is written.
"""

from __future__ import annotations

import math
from typing import Sequence

FILTER = "none"


def stderr(values: Sequence[float], scale: float = 1.0) -> float | None:
    """The standard error of the mean of per-sample values (sample std, ddof=1, over sqrt(n)),
    times `scale` (100 where the mean is reported in percent); None for fewer than two samples."""
    values = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return scale * math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def lm_eval_view(results: dict) -> dict:
    """{leaf: {"alias": leaf, "<metric>,none": value, "<metric>_stderr,none": se or "N/A"}} for
    every numeric metric of every leaf task (lm-eval writes "N/A" where it has no stderr)."""
    view = {}
    for leaf, metrics in results.items():
        entry = {"alias": leaf}
        for name, value in metrics.items():
            if name.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            entry[f"{name},{FILTER}"] = value
            se = metrics.get(f"{name}_stderr")
            entry[f"{name}_stderr,{FILTER}"] = se if isinstance(se, (int, float)) else "N/A"
        view[leaf] = entry
    return view
