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


def test_decode_step_ratio_leaves_out_the_key_block_loop():
    # the 8B's decode step at batch 8 over 131,072 slots traced for v5p-8: its key-block loop (traced bound)
    # holds one 8,192-key block of attention per layer, counted once; the ratio sets the matmuls outside
    # it beside the trunk and head (it read 1.29 with the loop's trip in it, and 1.02 when a trip was 512 keys)
    import jax.numpy as jnp

    from jaxeval.aot import targets as tg
    from jaxeval.aot.flops import program_flops
    from jaxeval.aot.programs import Abstract, decode_programs
    from jaxeval.aot.shapes import named_config
    from jaxeval.models.mesh import make_mesh
    from jaxeval.models.platform import target_platform

    config = named_config("llama-3.1-8b")
    devices = tg.devices("v5p-8")
    mesh = make_mesh("tensor=4", devices=list(devices), num_heads=config.num_heads, num_kv_heads=config.num_kv_heads)
    step = decode_programs(config, Abstract(mesh, devices[0]), jnp.bfloat16, prompt=130048, new_tokens=1024, rows=8,
                           prefill_chunk=2048, backend="splash")[-1]
    with target_platform("tpu"):
        traced = step.fn.trace(*step.args, **step.static)
    counted = program_flops(traced.jaxpr)
    assert counted["dynamic_loops"] >= 1 and counted["dynamic_matmul"] > 0.2 * step.flops_xla, counted
    assert 1 <= (counted["matmul"] - counted["dynamic_matmul"]) / step.flops_xla <= 1.05, counted
