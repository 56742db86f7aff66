"""The traced program's matmul FLOPs against jaxeval's count, traced (not compiled) for a TPU target:
seconds, so in the default tier where libtpu is installed."""

from __future__ import annotations

import pytest

from tests.aot.test_compile import needs_tpu

pytestmark = [needs_tpu, pytest.mark.usefixtures("compile_environment")]


def small_moe():
    from jaxeval.aot.shapes import SHAPES
    from jaxeval.models.config import config_from_hf

    raw = dict(SHAPES["qwen3-30b-a3b"]) | dict(hidden_size=256, intermediate_size=512, moe_intermediate_size=128,
                                                num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=8,
                                                num_experts=16, num_experts_per_tok=4, vocab_size=1024)
    return config_from_hf(raw, where="small moe")


def traced_ratio(config, target, spec, tokens=1024, chunk=1024):
    import jax.numpy as jnp

    from jaxeval.aot import targets as tg
    from jaxeval.aot.flops import program_flops
    from jaxeval.aot.programs import Abstract, read_programs
    from jaxeval.models.mesh import make_mesh
    from jaxeval.models.platform import target_platform

    devices = tg.devices(target)
    mesh = make_mesh(spec, devices=list(devices), num_heads=config.num_heads, num_kv_heads=config.num_kv_heads)
    prefill = read_programs(config, Abstract(mesh, devices[0]), jnp.bfloat16, tokens=tokens, rows=1,
                            read_positions=8, prefill_chunk=chunk, backend="splash")[0]
    with target_platform("tpu"):
        traced = prefill.fn.trace(*prefill.args, **prefill.static)
    counted = program_flops(traced.jaxpr)
    return counted, counted["matmul"] / prefill.flops_xla, prefill


@pytest.mark.parametrize("spec", ["expert=8", "tensor=8"])
def test_moe_traced_for_tpu_runs_the_grouped_matmul_at_the_routed_count(spec):
    # traced for the TPU, the MoE runs ragged_dot (not the CPU's blocked loop of traced trip count, which
    # the compile used to trace on a CPU-only machine: 0.41x); on the expert mesh each shard's grouped
    # matmul runs only its own experts' pairs, 1/8 of the rows it sorts
    counted, ratio, prefill = traced_ratio(small_moe(), "v5e-8", spec)
    assert counted["dynamic_loops"] == 0, counted
    assert 1 <= ratio <= 1.05, ratio  # the top-k outputs' weighted sum is a small einsum jaxeval does not count
    assert prefill.grouped_flops > 0
