"""Matmul FLOPs of a traced program, every loop counted as often as it runs.

XLA's cost_analysis() counts a while loop's body once (the layer scan: one layer of 32), so it
cannot be set beside jaxeval's count; the program's own jaxpr can: every dot_general's
2 x output elements x contracted size, times the lengths of the scans around it, times the shards
of a shard_map around it (its body is per shard); an MoE's ragged_dot counts 2 x its rows x
contracted x output width (each row multiplied by one expert's matrix). Pallas (Mosaic) kernels are left out: their
work is counted from their mask info (jaxeval.aot.programs.splash_blocks). Loops of a traced trip
count (the splash history's fori_loop) are counted once and reported.
"""

from __future__ import annotations

import math


def program_flops(jaxpr) -> dict:
    """-> {"matmul": FLOPs over all chips, "dynamic_loops": while loops counted once, "pallas_calls": n}."""
    totals = {"matmul": 0.0, "dynamic_loops": 0, "pallas_calls": 0}
    _walk(jaxpr, 1.0, totals)
    return totals


def _walk(jaxpr, times: float, totals: dict) -> None:
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)  # a ClosedJaxpr's inner one
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            out = eqn.outvars[0].aval.shape
            totals["matmul"] += times * 2.0 * math.prod(out) * math.prod(lhs[d] for d in lhs_contract)
            continue
        if name in ("ragged_dot", "ragged_dot_general"):  # an MoE's grouped matmul: each row meets one expert
            lhs = eqn.invars[0].aval.shape
            out = eqn.outvars[0].aval.shape
            totals["matmul"] += times * 2.0 * math.prod(out) * lhs[-1]
            continue
        if name == "pallas_call":
            totals["pallas_calls"] += 1
            continue
        if name == "scan":
            _walk(eqn.params["jaxpr"], times * eqn.params["length"], totals)
            continue
        if name == "while":
            totals["dynamic_loops"] += 1
            _walk(eqn.params["body_jaxpr"], times, totals)
            continue
        if name == "cond":
            branches = []
            for branch in eqn.params["branches"]:
                sub = {"matmul": 0.0, "dynamic_loops": 0, "pallas_calls": 0}
                _walk(branch, times, sub)
                branches.append(sub)
            worst = max(branches, key=lambda b: b["matmul"])
            for key in totals:
                totals[key] += worst[key]
            continue
        shards = 1.0
        if name == "shard_map":
            mesh = eqn.params["mesh"]
            manual = eqn.params.get("manual_axes") or eqn.params.get("axis_names") or mesh.axis_names
            shards = float(math.prod(mesh.shape[a] for a in manual))
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    _walk(sub, times * shards, totals)
