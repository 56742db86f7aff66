"""Mesh specs, the logical-axis rules, striping and mesh checks: no devices beyond this process's one."""

from __future__ import annotations

import numpy as np
import pytest
from jax.sharding import AbstractMesh, AxisType, PartitionSpec as P

from jaxeval.models.mesh import AXES, MeshError, auto_mesh_shape, make_mesh, parse_mesh_spec
from jaxeval.models.config import config_from_hf
from jaxeval.models.context import stripe_order
from jaxeval.models.param_layout import param_shapes
from jaxeval.models.sharding import PARAM_AXES, READ_CACHE, check_mesh_fits, spec


def abstract(**sizes):
    shape = tuple(sizes.get(a, 1) for a in AXES)
    return AbstractMesh(shape, AXES, axis_types=(AxisType.Auto,) * len(AXES))


def config(heads=8, kv=2):
    return config_from_hf(dict(model_type="llama", vocab_size=97, hidden_size=32, intermediate_size=48,
                               num_hidden_layers=2, num_attention_heads=heads, num_key_value_heads=kv, head_dim=8,
                               max_position_embeddings=4096, rope_theta=1e4))


def test_parse_mesh_spec():
    assert parse_mesh_spec("data=2, tensor=2,context=2") == {"data": 2, "fsdp": 1, "expert": 1, "tensor": 2, "context": 2}
    assert parse_mesh_spec("") == dict.fromkeys(AXES, 1)
    for bad, why in [("model=2", "AXIS=SIZE"), ("tensor", "AXIS=SIZE"), ("tensor=0", "positive integer"),
                     ("tensor=x", "positive integer"), ("tensor=2,tensor=2", "given twice")]:
        with pytest.raises(MeshError, match=why):
            parse_mesh_spec(bad)


def test_make_mesh_needs_the_device_count():
    with pytest.raises(MeshError, match="needs 2 devices, but 1 are available"):
        make_mesh("tensor=2")
    mesh = make_mesh("data=1")
    assert mesh.axis_names == AXES and mesh.size == 1
    assert make_mesh(mesh) is mesh
    assert auto_mesh_shape(8, num_heads=4) == {"data": 1, "fsdp": 1, "expert": 1, "tensor": 4, "context": 2}
    assert auto_mesh_shape(6, num_heads=8) == {"data": 1, "fsdp": 1, "expert": 1, "tensor": 2, "context": 3}
    assert auto_mesh_shape(6, num_heads=12, num_kv_heads=4) == {"data": 1, "fsdp": 1, "expert": 1, "tensor": 2, "context": 3}


def test_rules_replicate_what_an_axis_does_not_divide():
    mesh = abstract(data=2, tensor=4, context=2)
    assert spec((2, 32, 8, 8), PARAM_AXES["wq"], mesh) == P(None, None, "tensor", None)
    assert spec((2, 32, 2, 8), PARAM_AXES["wk"], mesh) == P(None, None, None, None)  # 2 KV heads < tensor=4
    assert spec((97, 32), PARAM_AXES["embed"], mesh) == P(None, None)  # vocab 97: replicated
    assert spec((128, 32), PARAM_AXES["embed"], mesh) == P("tensor", None)
    assert spec((1, 256, 32), ("batch", "sequence", "hidden"), mesh) == P(None, "context", None)
    assert spec((4, 256, 32), ("batch", "sequence", "hidden"), mesh) == P("data", "context", None)
    assert spec((2, 1, 512, 4, 8), READ_CACHE, mesh) == P(None, None, "context", "tensor", None)
    assert spec((4, 8), ("batch", "hidden"), abstract(data=2, fsdp=2)) == P(("data", "fsdp"), None)
    every = set(param_shapes(config())["layers"]) | {"embed", "lm_head", "final_norm"}
    assert every <= set(PARAM_AXES)


@pytest.mark.parametrize("cp", [1, 2, 8])
def test_stripes_give_each_shard_an_early_and_a_late_stripe(cp):
    t = 256
    order, inverse = stripe_order(t, cp)
    assert sorted(order.tolist()) == list(range(t))
    np.testing.assert_array_equal(order[inverse], np.arange(t))
    shards = order.reshape(cp, t // cp)
    work = [(s + 1).sum() for s in shards]  # causal work of a query ~ its position
    assert max(work) == min(work)
    if cp > 1:
        stripe = t // (2 * cp)
        assert shards[0][:stripe].tolist() == list(range(stripe))
        assert shards[0][stripe:].tolist() == list(range(t - stripe, t))
    with pytest.raises(ValueError, match="stripes"):
        stripe_order(100, 8)


def test_check_mesh_fits():
    check_mesh_fits(config(8, 2), abstract(tensor=8), 256)  # KV heads replicated
    check_mesh_fits(config(8, 8), abstract(tensor=4, context=2), 256)
    with pytest.raises(MeshError, match="tensor=4 does not divide the model's num_attention_heads=6"):
        check_mesh_fits(config(6, 2), abstract(tensor=4), 256)
    with pytest.raises(MeshError, match="must divide num_key_value_heads=4 or be a multiple of it"):
        check_mesh_fits(config(12, 4), abstract(tensor=6), 256)
    with pytest.raises(MeshError, match="prefill_chunk=100 must be a multiple of 2 \\* context = 8"):
        check_mesh_fits(config(), abstract(context=4), 100)


def test_distributed_settings_are_checked(monkeypatch):
    from jaxeval.engine.distributed import initialize_distributed, is_writer

    for name in ("JAXEVAL_COORDINATOR", "JAXEVAL_NUM_PROCESSES", "JAXEVAL_PROCESS_ID", "JAXEVAL_DISTRIBUTED"):
        monkeypatch.delenv(name, raising=False)
    assert initialize_distributed() is False  # nothing set: one process
    assert is_writer()
    monkeypatch.setenv("JAXEVAL_COORDINATOR", "127.0.0.1:1234")
    with pytest.raises(MeshError, match="needs JAXEVAL_NUM_PROCESSES and JAXEVAL_PROCESS_ID"):
        initialize_distributed()
    monkeypatch.setenv("JAXEVAL_NUM_PROCESSES", "two")
    with pytest.raises(MeshError, match="JAXEVAL_NUM_PROCESSES='two' must be an integer"):
        initialize_distributed()
