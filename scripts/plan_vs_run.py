"""`jaxeval plan` against the measured run on the embedded suite: time and memory within a stated factor.

    python scripts/plan_vs_run.py [--calibrate model|matmul] [--factor 3] [jaxeval run flags ...]

Runs `jaxeval run <flags> --calibrate C` (which records plan.estimated next to timing) into a
fresh folder, prints the estimated and measured tokens, wall time, device and host memory, and
exits 1 when the tokens differ or a ratio (estimated / measured) falls outside [1/F, F].
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from jaxeval.cli import main


def compare(flags: list[str], calibrate: str, factor: float) -> int:
    with tempfile.TemporaryDirectory() as out:
        code = main(["run", *flags, "--calibrate", calibrate, "--output_path", out])
        if code:
            return code
        (path,) = Path(out).glob("*.json")
        plan = json.loads(path.read_text())["plan"]
    estimate, measured, ratio = plan["estimated"], plan["measured"], plan["ratio_estimated_to_measured"]
    print(f"hardware: {estimate['hardware']}")
    print(f"{'':<22} {'estimated':>16} {'measured':>16} {'ratio':>8}")
    failed = []
    for key, other in (("tokens_read", "tokens_read"), ("wall_time_s", "wall_time_s"),
                       ("device_bytes_per_chip", "device_peak_bytes"), ("host_bytes", "host_peak_rss_bytes")):
        r = ratio[key]
        print(f"{key:<22} {estimate[key] if estimate[key] is not None else '-':>16} "
              f"{measured[other] if measured[other] is not None else '-':>16} {'-' if r is None else f'{r:.3f}':>8}")
        if key == "tokens_read" and r != 1.0 or r is not None and not 1 / factor <= r <= factor:
            failed.append(key)
    print(f"(the run's wall time includes its plan pass: {plan['seconds']} s)")
    if failed:
        print(f"outside the factor {factor}: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"within a factor of {factor}")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", default="model", choices=("model", "matmul", "auto"))
    parser.add_argument("--factor", type=float, default=3.0)
    known, rest = parser.parse_known_args()
    sys.exit(compare(rest, known.calibrate, known.factor))
