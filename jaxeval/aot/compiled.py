"""Compile one program for a target and read what the compiler says: memory per chip, FLOPs, and for
TPU the fusions' estimated cycles (loop bodies times their known trip counts) plus an analytic cost
of the Mosaic kernels (splash), which the compiler's cost model does not see."""

from __future__ import annotations

import re
import time

from jaxeval.aot.flops import program_flops
from jaxeval.aot.programs import Program, shard_bytes
from jaxeval.aot.targets import Target

_UNKNOWN_CYCLES = 2 ** 63 - 1  # libtpu's "no estimate" sentinel
_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{\s*$")
_CYCLES = re.compile(r'"estimated_cycles":"(\d+)"')
_WHILE = re.compile(r"while\(.*body=%?([\w.\-]+)")
_CONDITION = re.compile(r"condition=%?([\w.\-]+)")
_CONSTANT = re.compile(r"\bs32\[\]\S* constant\((\d+)\)")
_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_CALLS = re.compile(r"(?:calls|to_apply|body|condition|branch_computations)=\{?%?([\w.\-, %]+)\}?")


def compile_program(program: Program, target: Target, hlo_dir: str | None = None) -> dict:
    """-> the program's record (compiled, peak bytes per chip and its parts, FLOPs, time estimate, error)."""
    from jaxeval.models.platform import target_platform

    record = {"name": program.name, "compiled": False, "fits": False, "peak_bytes_per_chip": None,
              "flops_compiler": None, "flops_needed": program.flops_needed, "flops_xla_needed": program.flops_xla,
              "calls": program.calls, "holds": program.holds, "compile_s": None, "error": None}
    started = time.perf_counter()
    try:
        with target_platform("tpu" if target.platform == "tpu" else "gpu"):
            traced = program.fn.trace(*program.args, **program.static)
            lowered = traced.lower()
        record["lower_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        compiled = lowered.compile()
    except Exception as e:  # the compiler's refusal (RESOURCE_EXHAUSTED names the bytes) is the answer
        record["compile_s"] = round(time.perf_counter() - started, 2)
        record["error"] = f"{type(e).__name__}: {_first_line(str(e))}"
        return record
    record["compile_s"] = round(time.perf_counter() - started, 2)
    record["compiled"] = True
    counted = program_flops(traced.jaxpr)
    record["flops_program"] = counted["matmul"]  # all chips, loops x their trips, Mosaic kernels left out
    record["flops_program_loops_counted_once"] = counted["dynamic_loops"]
    record["flops_program_in_loops_counted_once"] = counted["dynamic_matmul"]
    # the matmuls outside loops of traced trip count against the part of the count XLA runs there (a
    # loop of traced bound, decode attention's key blocks, runs one trip in the count: not comparable)
    fixed = counted["matmul"] - counted["dynamic_matmul"]
    record["flops_ratio"] = fixed / program.flops_xla if program.flops_xla else None
    memory = compiled.memory_analysis()
    parts = {k: int(getattr(memory, f"{k}_size_in_bytes", 0) or 0)
             for k in ("argument", "output", "alias", "temp", "generated_code")}
    peak = int(getattr(memory, "peak_memory_in_bytes", 0) or 0)
    # CUDA's analysis has no peak: arguments, outputs not aliased to them, temporaries and code
    peak = peak or parts["argument"] + parts["output"] - parts["alias"] + parts["temp"] + parts["generated_code"]
    # what the chip holds besides: arguments jit dropped as unused (the LM head during a prefill) and the
    # run's arrays alive around the call (Program.resident); the run keeps them on the chip all the same
    parts["unused_arguments"] = max(0, shard_bytes(program.args) - parts["argument"])
    parts["resident_outside"] = program.resident
    parts["compiler_peak"] = peak
    record["peak_bytes_per_chip"] = peak + parts["unused_arguments"] + program.resident
    record["memory"] = parts
    record["fits"] = record["peak_bytes_per_chip"] <= target.hbm_bytes
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    if cost and "flops" in cost:
        record["flops_compiler"] = float(cost["flops"])
        record["bytes_accessed_compiler"] = float(cost.get("bytes accessed", 0.0))
    if hlo_dir:
        from pathlib import Path

        folder = Path(hlo_dir)
        folder.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^\w.,=-]+", "_", program.name)
        (folder / f"{target.name}-{safe}.hlo.txt").write_text(compiled.as_text())
    if target.platform == "tpu":
        hlo = compiled.as_text()
        record["mosaic_kernels"] = hlo.count('custom_call_target="tpu_custom_call"')  # splash compiled by Mosaic
        record["time"] = time_estimate(hlo, program, target)
    if program.splash:
        record["splash"] = program.splash
    return record


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:400]
    return text[:400]


def loop_cycles(hlo: str, dynamic_trips: float = 1.0) -> dict:
    """Sum of the fusions' estimated_cycles, each times the known trip counts of the loops around it
    -> {"cycles", "unknown" (fusions with no estimate), "dynamic_loops" (loops of a traced trip count,
    counted dynamic_trips times: the caller's mean)}."""
    computations, current = {}, None
    for line in hlo.splitlines():
        m = _COMPUTATION.match(line) if not line.startswith(" ") else None  # instructions are indented
        if m:
            current = m.group(1)
            computations[current] = []
            continue
        if current is not None:
            computations[current].append(line)
    entry = next((name for name, _ in computations.items() if f"ENTRY %{name}" in hlo or f"ENTRY {name}" in hlo),
                 None)
    totals = {"cycles": 0, "unknown": 0, "dynamic_loops": 0}
    seen = set()

    def walk(name, times):
        if name not in computations or (name, times) in seen:
            return
        seen.add((name, times))
        for line in computations[name]:
            cycles = _CYCLES.search(line)
            if cycles and " fusion(" in line or (cycles and "custom-call(" not in line and "fusion" in line):
                value = int(cycles.group(1))
                if value >= _UNKNOWN_CYCLES:
                    totals["unknown"] += 1
                else:
                    totals["cycles"] += value * times
            body = _WHILE.search(line)
            if body:
                trips = _trip_count(line, computations)
                if trips is None:
                    totals["dynamic_loops"] += 1
                walk(body.group(1), times * (trips or dynamic_trips))
            elif " call(" in line or "conditional(" in line:
                for group in _CALLS.findall(line):
                    for callee in group.replace("%", "").split(","):
                        walk(callee.strip(), times)

    if entry:
        walk(entry, 1)
    return totals


def _trip_count(line: str, computations: dict) -> int | None:
    """A while loop's trip count: XLA's known_trip_count, or its condition's `i < constant(N)` (scans
    count from 0); None when the bound is traced."""
    known = _TRIPS.search(line)
    if known:
        return int(known.group(1))
    condition = _CONDITION.search(line)
    body = computations.get(condition.group(1), []) if condition else []
    bound = [int(m.group(1)) for text in body for m in [_CONSTANT.search(text)] if m]
    if len(bound) == 1 and any("direction=LT" in text for text in body):
        return bound[0]
    return None


def time_estimate(hlo: str, program: Program, target: Target) -> dict:
    """Seconds of one call on one chip: XLA's part from the fusions' estimated cycles at the chip's
    clock, Mosaic's (splash) from its executed blocks at the chip's peak FLOP/s."""
    cycles = loop_cycles(hlo, program.dynamic_trips)
    xla_s = cycles["cycles"] / target.clock_hz
    mosaic_s = 0.0
    if program.splash:
        s = program.splash
        flops = s["executed_blocks"] * 4.0 * s["block_q"] * s["block_kv"] * s["head_dim"] * s["heads_rows"]
        mosaic_s = flops / program.calls / (target.peak_flops * target.chips)
    # an MoE's grouped matmuls (Mosaic kernels XLA makes of ragged_dot): the routed pairs' FLOPs at peak
    mosaic_s += program.grouped_flops / (target.peak_flops * target.chips)
    return {"xla_s": xla_s, "mosaic_s": mosaic_s, "total_s": xla_s + mosaic_s,
            "xla_source": "fusions' estimated_cycles x known loop trip counts / clock",
            "mosaic_source": "splash executed blocks x 4 x block_q x block_kv x head_dim, and an MoE's routed "
                             "experts (grouped matmuls), at peak FLOP/s",
            "fusions_without_estimate": cycles["unknown"], "loops_of_traced_trip_count": cycles["dynamic_loops"],
            "traced_loops_counted": program.dynamic_trips}
