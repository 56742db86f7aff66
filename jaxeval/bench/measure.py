"""`jaxeval bench` measurements: jaxeval and transformers side by side, interleaved, one process per side.

Each phase (a read length, generation, the rules configs) starts its own worker processes
(jaxeval.bench.worker), so a peak RSS belongs to one phase and one side. Repetitions alternate
between the sides (jaxeval, transformers, jaxeval, ...), so a load that changes during the run
falls on both; every figure is reported as a ratio against the baseline of the same run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

from jaxeval.errors import JaxevalError


class BenchError(JaxevalError):
    pass


class Worker:
    """One side in its own process (jaxeval.bench.worker), driven by JSON lines."""

    def __init__(self, side: str, folder: str, options: dict, env: dict | None = None):
        self.side = side
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen([sys.executable, "-m", "jaxeval.bench.worker", side, folder, json.dumps(options)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                        env={**os.environ, **(env or {})})
        self.ready = self._receive()

    def _receive(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.stderr.seek(0)
            tail = [x for x in self.stderr.read().splitlines() if x.strip()][-1:] or ["(no output)"]
            raise BenchError(f"bench: the {self.side} worker ended (exit status {self.process.returncode}): {tail[0]}")
        message = json.loads(line)
        if "error" in message and "ready" not in message and not hasattr(self, "ready"):
            raise BenchError(f"bench: {message['error']}")
        return message

    def call(self, op: str, **kwargs) -> dict:
        self.process.stdin.write(json.dumps({"op": op, **kwargs}) + "\n")
        self.process.stdin.flush()
        return self._receive()

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write('{"op": "exit"}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.stderr.close()


# the decode step's positions: early reads the same keys at every cache length (any growth with the
# cache is the step's own handling of it); late (slots - 2) reads the whole cache
DECODE_POSITIONS = {"early": 100, "late": "late"}


def load_average(when: str = "before") -> dict:
    """The 1, 5 and 15-minute load averages, under `when` (a phase's are taken before and after it)."""
    return {when: [round(x, 2) for x in os.getloadavg()]}


def _median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def _summary(first: dict, timed: list[dict]) -> dict:
    """Median of the timed repeats; the first call (compile + run on the jaxeval side) apart."""
    if "error" in first:
        return {"error": first["error"]}
    bad = next((t for t in timed if "error" in t), None)
    if bad:
        return {"error": bad["error"]}
    runs = timed or [first]
    out = {"seconds": _median([t["seconds"] for t in runs]), "times": [round(t["seconds"], 4) for t in runs],
           "first_call_s": round(first["seconds"], 4), "timed_includes_first_call": not timed,
           "peak_rss_mb": round(max(t["peak_rss_mb"] for t in (first, *timed)), 1)}
    if all("cpu_seconds" in t for t in runs):  # process CPU (every thread): steadier than wall on shared cores
        out["cpu_seconds"] = _median([t["cpu_seconds"] for t in runs])
    for key in ("mean_logprob", "finite", "jit_cache_sizes", "new_tokens", "first_row", "items", "sequences",
                "tokens_run", "tokens_naive"):
        if key in runs[-1]:
            out[key] = runs[-1][key]
    if "compile" in first:
        out["compile_first_call"] = first["compile"]
        out["compile_timed_calls"] = sum(t["compile"]["count"] for t in timed)
    return out


def interleaved(workers: dict, op: str, repeats: int, **kwargs) -> dict:
    """A first call on each side, then `repeats` timed calls alternating between the sides."""
    first = {side: w.call(op, **kwargs) for side, w in workers.items()}
    timed: dict[str, list] = {side: [] for side in workers}
    for _ in range(repeats):
        for side, w in workers.items():
            timed[side].append(w.call(op, **kwargs))
    return {side: _summary(first[side], timed[side]) for side in workers}


def start(sides: list[str], folder: str, options: dict, skipped: dict) -> dict:
    workers = {}
    for side in sides:
        if side in skipped:
            continue
        workers[side] = Worker(side, folder, options)
    return workers


def close(workers: dict) -> None:
    for w in workers.values():
        w.close()


def measure_matmul(worker: Worker, n: int, repeats: int = 5) -> dict:
    result = worker.call("matmul", n=n, repeats=repeats)
    if "error" in result:
        raise BenchError(f"bench: matmul calibration failed: {result['error']}")
    return result


def run_phases(folder: str, options: dict, plan: dict, transformers_reason: str | None, logits_bytes,
               available_bytes: int, progress=print, phase_done=lambda raw: None) -> dict:
    """Run every phase of the plan; the raw per-side figures (jaxeval.bench.report shapes them).
    phase_done(raw so far) runs after each phase (the command rewrites its JSON then)."""
    sides = ["jaxeval", "transformers"]
    base_skip = {"transformers": transformers_reason} if transformers_reason else {}
    out: dict = {"read": [], "generate": [], "decode_step": None, "rules": None, "matmul": [], "worker_info": {}}
    for tokens in plan["lengths"]:
        skip = dict(base_skip)
        need = logits_bytes(tokens)
        if not skip and need > 0.8 * available_bytes:
            skip["transformers"] = (f"its full logits alone need {need / 2 ** 30:.1f} GiB at {tokens} tokens, "
                                    f"over 80% of the {available_bytes / 2 ** 30:.1f} GiB available")
        progress(f"bench: read of {tokens} tokens ...")
        load = load_average()
        workers = start(sides, folder, options, skip)
        try:
            out["worker_info"] |= {side: w.ready["info"] for side, w in workers.items()}
            out["matmul"].append(measure_matmul(workers["jaxeval"], plan["matmul_n"]))
            result = interleaved(workers, "read", plan["repeats"], tokens=tokens)
            out["matmul"].append(measure_matmul(workers["jaxeval"], plan["matmul_n"]))
            for side, w in workers.items():
                result[side]["load_s"] = round(w.ready["load_s"], 2)
        finally:
            close(workers)
        out["read"].append({"tokens": tokens, "sides": result, "skipped": skip, "load": load | load_average("after")})
        phase_done(out)
    if plan["decode_slots"]:
        progress(f"bench: decode step, {plan['decode_rows']} rows, {', '.join(map(str, plan['decode_slots']))} "
                 "cache slots ...")
        load = load_average()
        worker = Worker("jaxeval", folder, options)
        try:
            result = worker.call("decode_step", rows=plan["decode_rows"], slots=plan["decode_slots"],
                                 positions=DECODE_POSITIONS, repeats=plan["decode_repeats"])
        finally:
            worker.close()
        out["decode_step"] = result | {"load": load | load_average("after")}
        phase_done(out)
    if plan["batches"]:
        progress(f"bench: generation, batches {', '.join(map(str, plan['batches']))} ...")
        workers = start(sides, folder, options, base_skip)
        try:
            out["worker_info"] |= {side: w.ready["info"] for side, w in workers.items()}
            for batch in plan["batches"]:
                load = load_average()
                result = interleaved(workers, "generate", plan["repeats"], batch=batch,
                                     prompt_tokens=plan["prompt_tokens"], new_tokens=plan["new_tokens"])
                out["generate"].append({"batch": batch, "sides": result, "skipped": base_skip,
                                        "load": load | load_average("after")})
                phase_done(out)
        finally:
            close(workers)
    if plan["rules_limit"]:
        progress(f"bench: rules configs, {plan['rules_limit']} item(s) per config, with and without prefix reuse ...")
        load = load_average()
        worker = Worker("jaxeval", folder, options)
        try:
            first = {reuse: worker.call("rules", reuse=reuse, limit=plan["rules_limit"]) for reuse in (True, False)}
            timed = {True: [], False: []}
            for _ in range(plan["rules_repeats"]):
                for reuse in (True, False):
                    timed[reuse].append(worker.call("rules", reuse=reuse, limit=plan["rules_limit"]))
            out["rules"] = {"reuse": _summary(first[True], timed[True]), "no_reuse": _summary(first[False], timed[False]),
                            "load": load | load_average("after")}
        finally:
            worker.close()
    return out
