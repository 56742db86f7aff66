"""Issue 25's acceptance check, by hand: model shapes x lengths x targets through the documented
`jaxeval compile` command (a subprocess each, as a user runs it), every report checked.

Per case (python -m jaxeval compile TARGET --model M --lengths ... --out case.json):
  - every program compiles (a case expected not to fit: the failing program is the compiler's refusal);
  - each program's per-chip peak lies between the weights-plus-KV-cache bytes the chip holds and
    1.5x of them plus one chunk's activations (`activation_bytes` below);
  - a configuration reported as fitting compiled; one reported as not fitting failed to compile
    (RESOURCE_EXHAUSTED), not merely a peak of jaxeval's arithmetic above the chip's HBM;
  - splash executes at most 1.1x the causal minimum of blocks (where splash runs).
A case with --batch_size auto also compiles the first batch the search refused and checks that it fails.

    PYTHONPATH=$PWD /work/venvs/tpu/bin/python scripts/compile_acceptance.py --list
    PYTHONPATH=$PWD /work/venvs/tpu/bin/python scripts/compile_acceptance.py --cases 8b-h100,8b-h200 \
        --out /tmp/acceptance [--jobs 2]

Writes <out>/<case>.json (jaxeval compile's report), <out>/<case>.log (its stderr) and
<out>/summary.json; prints one line per program and a verdict per case; exit 1 when a check fails.
Times on 2 shared cores: a CUDA case 10-60 s, a TPU 8B/70B case of two lengths 4-10 min, the
MoE about 5 min (docs/compile.md has the figures of the last run).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from jaxeval.errors import JaxevalError
from jaxeval.io.inputs import read_json

ROOT = Path(__file__).resolve().parents[1]
GIB = 2 ** 30

# name -> (compile arguments, "fits" or "not_fit", why); the not_fit cases are sized so that the
# weights alone exceed the chip: the compiler must refuse them.
CASES = {
    "8b-h100": (["h100", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "one GPU, chunked attention"),
    "8b-h200": (["h200", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "one GPU"),
    "8b-h200-auto": (["h200", "--model", "llama-3.1-8b", "--lengths", "32k", "--batch_size", "auto:16"], "fits",
                     "batch found by compiling; the first refused batch must fail to compile"),
    "70b-h200": (["h200", "--model", "llama-3.1-70b", "--lengths", "32k"], "not_fit",
                 "131.4 GiB of weights and 10 GiB of cache on a 140.4 GiB GPU"),
    "70b-h100x8": (["h100x8", "--model", "llama-3.1-70b", "--lengths", "32k,128k"], "fits", "tensor=8"),
    "8b-v5e-8": (["v5e-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "splash as Mosaic"),
    "8b-v5p-8": (["v5p-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "splash as Mosaic"),
    "8b-v6e-8": (["v6e-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "splash as Mosaic"),
    "8b-2xv5e-8": (["2xv5e-8", "--model", "llama-3.1-8b", "--lengths", "32k,128k"], "fits", "two slices over DCN"),
    "70b-v5p-8": (["v5p-8", "--model", "llama-3.1-70b", "--lengths", "32k,128k"], "fits", "35 GiB of weights per chip"),
    "70b-v6e-8": (["v6e-8", "--model", "llama-3.1-70b", "--lengths", "32k"], "fits", "17.5 GiB of weights per chip"),
    "70b-v5e-8": (["v5e-8", "--model", "llama-3.1-70b", "--lengths", "32k", "--mesh", "tensor=8"], "not_fit",
                  "16.4 GiB of weights per chip over 15.75"),
    "70b-2xv5e-8": (["2xv5e-8", "--model", "llama-3.1-70b", "--lengths", "128k"], "fits", "16 chips, two slices"),
    "hybrid-v6e-8": (["v6e-8", "--model", "qwen3.5-hybrid-4b", "--lengths", "32k", "--mesh", "tensor=8"], "fits",
                     "Qwen3.5 hybrid, splash per shard"),
    "moe-v6e-8": (["v6e-8", "--model", "qwen3-30b-a3b", "--lengths", "32k", "--mesh", "expert=8"], "fits",
                  "MoE on an expert mesh"),
}
BOUND = 1.5  # peak <= BOUND x (weights + KV cache per chip) + one chunk's activations


def activation_bytes(config, name: str) -> int:
    """One call's activations, whole (not per chip, so an upper bound of a chip's share), in float32:
    per token of the call the hidden state, q, k, v and the attention output, the MLP's gate and up
    projections (an MoE's routed experts' for its k experts, and its shared expert), and for the head
    its logits. Tokens of the call: rows x chunk for a prefill, rows for a decode step, the read rows
    for the head, from the program's name."""
    fields = dict(re.findall(r"(\w+)=(\d+)", name))
    rows, chunk = int(fields.get("rows", 1)), int(fields.get("chunk", 1))
    kind = name.split("[")[0]
    if kind == "read_head":
        return 4 * rows * (config.hidden_size + config.vocab_size)
    tokens = rows if kind.startswith("decode") else (chunk if kind.startswith("prefill_row[") else rows * chunk)
    attention = (2 * config.num_heads + 2 * config.num_kv_heads) * config.head_dim
    mlp = 2 * config.intermediate_size
    if config.moe is not None:
        mlp = 2 * config.moe_intermediate_size * config.moe.top_k + 2 * config.intermediate_size
    return 4 * tokens * (config.hidden_size + attention + mlp)


def check_program(p: dict, config, expect: str) -> list[str]:
    """-> the checks this program's record fails (empty: it passes)."""
    bad = []
    if not p["compiled"]:
        if expect == "fits" or not ("RESOURCE_EXHAUSTED" in (p["error"] or "") or "memory" in (p["error"] or "")):
            bad.append(f"does not compile: {p['error']}")
        return bad
    held = p["holds"]["weights"] + p["holds"]["kv_cache"]
    ceiling = BOUND * held + activation_bytes(config, p["name"])
    peak = p["peak_bytes_per_chip"]
    if peak < held:
        bad.append(f"peak {peak / GIB:.2f} GiB below the {held / GIB:.2f} GiB of weights and cache it holds")
    if peak > ceiling:
        bad.append(f"peak {peak / GIB:.2f} GiB above {BOUND} x {held / GIB:.2f} GiB held + "
                   f"{activation_bytes(config, p['name']) / GIB:.3f} GiB of activations = {ceiling / GIB:.2f}")
    splash = p.get("splash")
    if splash and splash.get("ratio") is not None and splash["ratio"] > 1.1:
        bad.append(f"splash executes {splash['ratio']:.2f}x the causal minimum of blocks")
    if splash and p.get("mosaic_kernels") == 0:
        bad.append("splash not compiled as Mosaic")
    return bad


def refused(p: dict, report: dict) -> bool:
    """Whether the compiler itself refuses the program: it fails to compile for memory (TPU:
    RESOURCE_EXHAUSTED), or (CUDA, whose deviceless compile does not refuse arguments larger than the
    GPU) the compiler's own peak, arguments included, exceeds the chip's memory."""
    if not p["compiled"]:
        return "RESOURCE_EXHAUSTED" in (p["error"] or "") or "memory" in (p["error"] or "").lower()
    return report["platform"] == "cuda" and p["memory"]["compiler_peak"] > report["hbm_bytes_per_chip"]


def compile_case(args: list[str], out: Path, python: str) -> tuple[int, dict | None, str, float, float]:
    """`jaxeval compile ARGS --out out` -> (exit code, report, stderr, wall s, that process's CPU s)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    log = out.with_suffix(".stderr")
    started = time.perf_counter()
    with open(log, "w") as err:
        proc = subprocess.Popen([python, "-m", "jaxeval.cli", "compile", *args, "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # its own CPU, not that of other jobs' processes
    wall = time.perf_counter() - started
    report = json.loads(out.read_text()) if out.is_file() else None
    return os.waitstatus_to_exitcode(status), report, log.read_text(), wall, usage.ru_utime + usage.ru_stime


def run_case(name: str, folder: Path, python: str) -> dict:
    args, expect, why = CASES[name]
    code, report, err, wall, cpu_s = compile_case(args, folder / f"{name}.json", python)
    (folder / f"{name}.log").write_text(err)
    result = {"case": name, "command": "jaxeval compile " + " ".join(args), "expect": expect, "why": why,
              "exit": code, "wall_s": round(wall, 1), "cpu_s": round(cpu_s, 1), "problems": [], "programs": []}
    if report is None:
        result["problems"].append(f"no report (exit {code}): {err.strip().splitlines()[-1] if err.strip() else ''}")
        return result
    return check_report(result, report, args, folder, python)


def _config(model: str):
    from pathlib import Path as _Path

    from jaxeval.aot.shapes import named_config
    from jaxeval.models.config import load_hf_config

    return named_config(model) or load_hf_config(_Path(model))


def check_report(result: dict, report: dict, args: list[str], folder: Path, python: str) -> dict:
    """result with the checks of one case's report (a refused batch compiled again into folder)."""
    name, expect, code = result["case"], result["expect"], result["exit"]
    config = _config(report["model"])
    result |= {"mesh": report["mesh"], "batch_size": report["batch_size"], "fits": report["fits"]}
    if (expect == "fits") != report["fits"]:
        result["problems"].append(f"expected {expect}, reported fits={report['fits']}: {report.get('verdict')}")
    if (code == 0) != report["fits"]:
        result["problems"].append(f"exit {code} with fits={report['fits']}")
    if not report["fits"] and not any(refused(p, report) for p in report["programs"]):
        result["problems"].append("reported as not fitting, yet every program compiled within the chip's memory "
                                  "by the compiler's own account")
    for p in report["programs"]:
        bad = check_program(p, config, expect)
        held = p["holds"]["weights"] + p["holds"]["kv_cache"]
        peak = p["peak_bytes_per_chip"]
        result["programs"].append({"name": p["name"], "length": p.get("length"), "compiled": p["compiled"],
                                   "fits": p["fits"], "peak_gib": None if peak is None else round(peak / GIB, 3),
                                   "held_gib": round(held / GIB, 3),
                                   "peak_over_held": None if not peak or not held else round(peak / held, 3),
                                   "compile_s": p["compile_s"], "splash_ratio": (p.get("splash") or {}).get("ratio"),
                                   "problems": bad})
        result["problems"] += [f"{p['name']}: {b}" for b in bad]
    first_refused = next((s for s in report.get("batch_search") or [] if not s["fits"]), None)
    if first_refused and args:  # a batch reported as not fitting must fail to compile
        at = args.index("--batch_size")
        again = args[:at] + ["--batch_size", str(first_refused["rows"])] + args[at + 2:]
        code2, report2, err2, wall2, _ = compile_case(again, folder / f"{name}-refused.json", python)
        result["refused_batch"] = {"rows": first_refused["rows"], "exit": code2, "wall_s": round(wall2, 1)}
        if code2 != 2 or report2 is None or not any(refused(p, report2) for p in report2["programs"]):
            result["problems"].append(f"batch {first_refused['rows']} was refused by the search but the compiler "
                                      "compiles it within the chip's memory")
    return result


def _print(result: dict) -> None:
    state = "PASS" if not result["problems"] else "FAIL"
    print(f"{state} {result['case']}: {result['command']} (exit {result['exit']}, {result['wall_s']} s wall, "
          f"{result['cpu_s']} s CPU; mesh {result.get('mesh')}, batch {result.get('batch_size')})", flush=True)
    for p in result["programs"]:
        print(f"    {p['name'][:60]:<60} peak {p['peak_gib']} GiB held {p['held_gib']} ratio {p['peak_over_held']} "
              f"splash {p['splash_ratio']} compile {p['compile_s']} s" + (f"  <- {'; '.join(p['problems'])}"
                                                                            if p["problems"] else ""), flush=True)
    for problem in result["problems"]:
        if ": " not in problem or not any(problem.startswith(p["name"]) for p in result["programs"]):
            print(f"    problem: {problem}", flush=True)


def table(summary: dict) -> str:
    """The summary's cases as a markdown table (docs/compile.md)."""
    rows = ["| case | command | mesh, batch | largest peak / held per chip, GiB | peak / held, worst | splash | "
            "CPU s | result |", "|---|---|---|---|---|---|---|---|"]
    for r in summary.values():
        programs = [p for p in r["programs"] if p["peak_gib"] is not None]
        top = max(programs, key=lambda p: p["peak_gib"], default=None)
        worst = max((p["peak_over_held"] or 0 for p in programs), default=0)
        splash = max((p["splash_ratio"] for p in r["programs"] if p["splash_ratio"] is not None), default=None)
        refused = [p["name"].split("[")[0] for p in r["programs"] if not p["compiled"]]
        state = "pass" if not r["problems"] else "FAIL: " + "; ".join(r["problems"])[:300]
        if r["expect"] == "not_fit":
            state = f"not fitting ({', '.join(refused) or 'compiler peak'} refused): " + state
        peak = "-" if top is None else f"{top['peak_gib']:.2f} / {top['held_gib']:.2f}"
        rows.append(f"| {r['case']} | `{r['command']}` | {r.get('mesh')}, {r.get('batch_size')} | {peak} | "
                    f"{worst:.2f} | {'-' if splash is None else f'{splash:.2f}'} | {'-' if r['cpu_s'] is None else round(r['cpu_s'])} | {state} |")
    return "\n".join(rows) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated case names (--list)")
    p.add_argument("--list", action="store_true", help="print the cases and exit")
    p.add_argument("--out", default="/tmp/compile_acceptance", help="folder for the reports and summary")
    p.add_argument("--jobs", type=int, default=1, help="cases compiled at once (each is single-threaded mostly)")
    p.add_argument("--python", default=sys.executable, help="the Python with libtpu and the CUDA plugin")
    p.add_argument("--check", nargs="+", metavar="REPORT.json", default=None,
                   help="check reports jaxeval compile already wrote (e.g. the tpu_compile_ci tier's) instead "
                        "of compiling; expected to fit")
    a = p.parse_args(argv)
    if a.check:
        failed = 0
        for path in a.check:
            report = read_json(path, name="compile report")
            result = {"case": path, "command": f"{report['target']} --model {report['model']}", "expect": "fits",
                      "why": "", "exit": 0 if report["fits"] else 2, "wall_s": 0.0, "cpu_s": 0.0, "problems": [],
                      "programs": []}
            result = check_report(result, report, [], Path(a.out), a.python)
            _print(result)
            failed += bool(result["problems"])
        return 1 if failed else 0
    if a.list:
        for name, (args, expect, why) in CASES.items():
            print(f"{name:<14} {expect:<8} jaxeval compile {' '.join(args)}  ({why})")
        return 0
    names = [n.strip() for n in a.cases.split(",") if n.strip()]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"compile_acceptance: unknown case(s) {', '.join(unknown)} (known: {', '.join(CASES)})", file=sys.stderr)
        return 2
    folder = Path(a.out)
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        for result in pool.map(lambda n: run_case(n, folder, a.python), names):
            _print(result)
            results.append(result)
    summary = folder / "summary.json"
    previous = read_json(summary, name="summary") if summary.is_file() else {}
    previous.update({r["case"]: r | {"load_average": os.getloadavg()} for r in results})
    summary.write_text(json.dumps(previous, indent=2) + "\n")
    (folder / "summary.md").write_text(table(previous))
    failed = [r["case"] for r in results if r["problems"]]
    print(f"{len(results) - len(failed)} of {len(results)} cases pass" + (f"; failing: {', '.join(failed)}"
                                                                          if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (JaxevalError, OSError) as e:  # a report to --check, or --out, unreadable or unwritable: one line
        print(f"compile_acceptance: {e}", file=sys.stderr)
        sys.exit(2)
