"""jaxeval's read at a base commit and in this checkout against transformers, interleaved in one run.

    git worktree add /tmp/base 2ffffe8
    python perf/read_ab.py llama-57m --base /tmp/base --lengths 8192,32768 --repeats 2 --out FILE.json

`jaxeval bench` compares jaxeval with transformers; this compares two versions of jaxeval with
transformers in the same run, so a change's effect is not confused with the load of a shared
machine. Three worker processes (jaxeval.bench.worker: the bench's own sides, the base one run
with the base checkout first on PYTHONPATH) each load the model once; for every length each side
makes a first call (jaxeval compiles), then --repeats rounds call base, this checkout and
transformers in turn. Reported per side: the median and best wall seconds and the CPU seconds of
the worker process (user + system from /proc, so time lost to other processes on the cores does
not count), the ratios to transformers, and the share of the float32 matmul peak (measured by the
checkout's worker before and after each length, best taken) on the FLOPs the read needs
(jaxeval.plan.flops.read_flops). Reads are every position of random ids, as the bench's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_step import write_report  # noqa: E402 (the perf scripts' one --out writer)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help="a model folder or a bench shape (llama-57m)")
    parser.add_argument("--base", required=True, help="a checkout of the base commit (git worktree add)")
    parser.add_argument("--lengths", default="8192")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--transformers", choices=("on", "off"), default="on")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from jaxeval.bench.measure import Worker
    from jaxeval.bench.shapes import SHAPES, shape_folder
    from jaxeval.models.config import load_hf_config
    from jaxeval.plan.flops import read_flops

    folder = str(shape_folder(args.model) if args.model in SHAPES else args.model)
    config = load_hf_config(folder)
    options = {"dtype": "float32", "attention": "chunked", "prefill_chunk": 2048}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = lambda root: {"PYTHONPATH": os.path.abspath(root)}  # noqa: E731
    workers = {"base": Worker("jaxeval", folder, options, env(args.base)), "this": Worker("jaxeval", folder, options, env(here))}
    if args.transformers == "on":
        workers["transformers"] = Worker("transformers", folder, options)
    report = {"model": folder, "base": os.path.abspath(args.base), "command": "python perf/read_ab.py " + " ".join(
        f"{k} {v}" for k, v in (("", args.model), ("--base", args.base), ("--lengths", args.lengths),
                                ("--repeats", args.repeats), ("--transformers", args.transformers))).strip(),
              "lengths": []}
    try:
        for tokens in (int(n) for n in args.lengths.split(",")):
            peak = [workers["this"].call("matmul", n=2048, repeats=5)["flops_per_s"]]
            first = {side: w.call("read", tokens=tokens) for side, w in workers.items()}
            runs = {side: [] for side in workers}
            for _ in range(args.repeats):
                for side, w in workers.items():
                    before = cpu_seconds(w.process.pid)
                    answer = w.call("read", tokens=tokens)
                    if "error" in answer:
                        raise SystemExit(f"read_ab: {side}: {answer['error']}")
                    runs[side].append({"wall": answer["seconds"], "cpu": cpu_seconds(w.process.pid) - before,
                                       "mean_logprob": answer["mean_logprob"]})
            peak.append(workers["this"].call("matmul", n=2048, repeats=5)["flops_per_s"])
            need = read_flops(config, tokens - 1, tokens - 1)["total"]
            sides = {side: {"wall_median": statistics.median(r["wall"] for r in rs), "wall_best": min(r["wall"] for r in rs),
                            "cpu_median": statistics.median(r["cpu"] for r in rs), "cpu_best": min(r["cpu"] for r in rs),
                            "walls": [round(r["wall"], 3) for r in rs], "cpus": [round(r["cpu"], 3) for r in rs],
                            "mean_logprob": rs[-1]["mean_logprob"], "first_call_s": first[side].get("seconds")}
                     for side, rs in runs.items()}
            for s in sides.values():
                s["share_of_peak"] = need / s["wall_best"] / max(peak)
            row = {"tokens": tokens, "load": list(os.getloadavg()), "matmul_peak_flops_per_s": peak,
                   "needed_flops": need, "sides": sides}
            ref = sides.get("transformers")
            for side in ("base", "this"):
                row[f"{side}_over_transformers"] = None if ref is None else {
                    k: sides[side][k] / ref[k] for k in ("wall_median", "wall_best", "cpu_median", "cpu_best")}
            row["this_over_base"] = {k: sides["this"][k] / sides["base"][k]
                                     for k in ("wall_median", "wall_best", "cpu_median", "cpu_best")}
            report["lengths"].append(row)
            print(json.dumps(row, indent=1), flush=True)
            write_report(report, args.out)
    finally:
        for w in workers.values():
            w.close()


if __name__ == "__main__":
    main()
