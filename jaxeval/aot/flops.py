"""Matmul FLOPs of a traced program, every loop counted as often as it runs.

XLA's cost_analysis() counts a while loop's body once (the layer scan: one layer of 32), so it
cannot be set beside jaxeval's count; the program's own jaxpr can: every dot_general's
2 x output elements x contracted size, times the lengths of the scans around it, times the shards
of a shard_map around it (its body is per shard); an MoE's ragged_dot counts 2 x its rows x
contracted x output width (each row multiplied by one expert's matrix), and inside a shard_map over
the `expert` axis 1/expert of its rows: each shard sorts all its tokens' pairs but holds 1/expert of
the experts, and the TPU's grouped matmul (a Mosaic kernel XLA makes of ragged_dot, whose static
cost_estimate counts every row) runs only the row tiles of its own groups, the other shards' pairs
sorted after them and never run (jaxeval.models.moe_parallel). Pallas (Mosaic) kernels are left out: their
work is counted from their mask info (jaxeval.aot.programs.splash_blocks). Loops of a traced trip
count (the splash history's fori_loop, decode attention's key-block loop) are counted once and
reported, their matmuls apart (`dynamic_matmul`: one trip of an unknown number, not comparable
with a count of the whole work).
"""

from __future__ import annotations

import math


def program_flops(jaxpr) -> dict:
    """-> {"matmul": FLOPs over all chips, "dynamic_matmul": the part of it inside while loops (of a
    traced trip count: counted for one trip), "dynamic_loops": while loops counted once, "pallas_calls": n}."""
    totals = {"matmul": 0.0, "dynamic_matmul": 0.0, "dynamic_loops": 0, "pallas_calls": 0}
    _walk(jaxpr, 1.0, totals)
    return totals


def _add(totals: dict, flops: float, dynamic: bool) -> None:
    totals["matmul"] += flops
    if dynamic:
        totals["dynamic_matmul"] += flops


def _walk(jaxpr, times: float, totals: dict, experts: int = 1, dynamic: bool = False) -> None:
    """experts: the shards of the `expert` axis of a shard_map around (1 outside one); dynamic: inside a
    while loop."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)  # a ClosedJaxpr's inner one
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            out = eqn.outvars[0].aval.shape
            _add(totals, times * 2.0 * math.prod(out) * math.prod(lhs[d] for d in lhs_contract), dynamic)
            continue
        if name in ("ragged_dot", "ragged_dot_general"):  # an MoE's grouped matmul: each row meets one expert
            lhs = eqn.invars[0].aval.shape
            out = eqn.outvars[0].aval.shape
            _add(totals, times * 2.0 * math.prod(out) * lhs[-1] / experts, dynamic)
            continue
        if name == "pallas_call":
            totals["pallas_calls"] += 1
            continue
        if name == "scan":
            _walk(eqn.params["jaxpr"], times * eqn.params["length"], totals, experts, dynamic)
            continue
        if name == "while":
            totals["dynamic_loops"] += 1
            _walk(eqn.params["body_jaxpr"], times, totals, experts, True)
            continue
        if name == "cond":
            branches = []
            for branch in eqn.params["branches"]:
                sub = {"matmul": 0.0, "dynamic_matmul": 0.0, "dynamic_loops": 0, "pallas_calls": 0}
                _walk(branch, times, sub, experts, dynamic)
                branches.append(sub)
            worst = max(branches, key=lambda b: b["matmul"])
            for key in totals:
                totals[key] += worst[key]
            continue
        shards, inner_experts = 1.0, experts
        if name == "shard_map":
            mesh = eqn.params["mesh"]
            manual = eqn.params.get("manual_axes") or eqn.params.get("axis_names") or mesh.axis_names
            shards = float(math.prod(mesh.shape[a] for a in manual))
            inner_experts = experts * (mesh.shape["expert"] if "expert" in manual else 1)
        for value in eqn.params.values():
            for sub in value if isinstance(value, (tuple, list)) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    _walk(sub, times * shards, totals, inner_experts, dynamic)
