"""Batched greedy generation, jaxeval against transformers (and a baseline jaxeval checkout), interleaved.

Starts `jaxeval bench`'s own worker processes (jaxeval.bench.measure.Worker: each side alone in its
process, the same `generate` op the bench's generation rows call) and calls them in turn: a first
(compiling) call each, then --repeats timed calls alternating between the sides. Each call's wall
seconds come from the worker; its process CPU seconds (user + system, all threads) are read from
/proc around the call, so a loaded machine shows as wall well above CPU.

    python perf/generate_ab.py --model llama-57m --batch 8 --prompt_tokens 4096 --new_tokens 128 \
        --repeats 3 [--baseline e6c3f13] --out perf/results/generate_ab_llama-57m.json
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def export(commit: str) -> str:
    """The package at `commit`, exported (git archive) to a temporary folder -> that folder."""
    folder = tempfile.mkdtemp(prefix=f"jaxeval-{commit}-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "jaxeval"], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    return folder


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="llama-57m", help="a bench shape name or an HF model folder")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--prompt_tokens", type=int, default=4096)
    p.add_argument("--new_tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--baseline", default=None, help="a commit whose jaxeval runs as a third side")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    from jaxeval.bench.measure import Worker
    from jaxeval.bench.shapes import SHAPES, shape_folder

    folder = str(shape_folder(args.model)) if args.model in SHAPES else args.model
    options = {"dtype": args.dtype, "attention": "chunked", "prefill_chunk": 2048}
    sides = {"jaxeval": ("jaxeval", {"PYTHONPATH": str(ROOT)})}
    if args.baseline:
        sides["baseline"] = ("jaxeval", {"PYTHONPATH": export(args.baseline)})
    sides["transformers"] = ("transformers", {})
    workers = {name: Worker(side, folder, options, env) for name, (side, env) in sides.items()}
    kwargs = dict(batch=args.batch, prompt_tokens=args.prompt_tokens, new_tokens=args.new_tokens)
    runs: dict = {name: [] for name in workers}
    try:
        for repeat in range(args.repeats + 1):  # the first round compiles (jaxeval) and is left out
            for name, w in workers.items():
                before = cpu_seconds(w.process.pid)
                answer = w.call("generate", **kwargs)
                if "error" in answer:
                    raise SystemExit(f"generate_ab: {name}: {answer['error']}")
                runs[name].append({"wall_s": answer["seconds"], "cpu_s": cpu_seconds(w.process.pid) - before,
                                   "new_tokens": answer["new_tokens"], "first_row": answer["first_row"]})
                print(f"round {repeat} {name}: wall {answer['seconds']:.2f} s, cpu {runs[name][-1]['cpu_s']:.2f} s",
                      file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()
    out = {"command": "python perf/generate_ab.py " + " ".join(argv if argv is not None else sys.argv[1:]),
           "model": args.model, "load_average": os.getloadavg(), **kwargs, "sides": {}}
    for name, rs in runs.items():
        timed = rs[1:]
        wall, cpu = min(r["wall_s"] for r in timed), min(r["cpu_s"] for r in timed)
        out["sides"][name] = {"wall_s": [round(r["wall_s"], 3) for r in timed],
                              "cpu_s": [round(r["cpu_s"], 3) for r in timed], "min_wall_s": wall, "min_cpu_s": cpu,
                              "tokens_per_s_wall": timed[0]["new_tokens"] / wall,
                              "tokens_per_s_cpu": timed[0]["new_tokens"] / cpu, "first_row": timed[-1]["first_row"]}
    t = out["sides"]["transformers"]
    for name in out["sides"]:
        s = out["sides"][name]
        s["speed_vs_transformers_wall"] = s["tokens_per_s_wall"] / t["tokens_per_s_wall"]
        s["speed_vs_transformers_cpu"] = s["tokens_per_s_cpu"] / t["tokens_per_s_cpu"]
        s["first_row_agrees"] = s["first_row"] == t["first_row"]
    print(json.dumps({n: {k: v for k, v in s.items() if k != "first_row"} for n, s in out["sides"].items()}, indent=1))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
