"""Expert parallelism: a mixture of experts' routed experts split over the mesh's `expert` axis.

    sparse_moe(p, spec, x, routed=functools.partial(expert_parallel_routed, mesh))
"""

from __future__ import annotations

import jax
from jax.sharding import PartitionSpec as P

from jaxeval.models.context import _shard_map  # the shard_map of this jax (also the attention's)
from jaxeval.models.moe import MoESpec, local_routed
from jaxeval.models.sharding import spec as rule_spec


def expert_parallel_routed(mesh, p, spec: MoESpec, x, impl="auto", block=None):
    """The routed experts on a mesh with an `expert` axis: x [B, T, D] -> [B, T, D].

    Expert parallelism without an all-to-all: the tokens stay where they are (batch over data/fsdp,
    sequence over context), each device routes its tokens, sorts the (token, expert) pairs and runs
    only those of its own E / expert experts (their width split over `tensor`, as the rules table
    lays the weights out), and one psum over expert x tensor adds the partial outputs. Per device
    the routed cost is T*k/expert rows on average; the communication is one [tokens, D] reduction per
    layer, where an all-to-all would move the k copies of each token there and back.
    """
    routed = {name: p[name] for name in _ROUTED if name in p}
    specs = {name: rule_spec(a.shape, _ROUTED_AXES[name], mesh) if name in _ROUTED_AXES else P()
             for name, a in routed.items()}
    x_spec = rule_spec(x.shape, ("batch", "sequence", "hidden"), mesh)
    reduce = tuple(a for a in ("expert", "tensor") if a in {specs["w_gate"][0], specs["w_gate"][2]})

    def local(p, x):
        if "b_down" in p and "tensor" in reduce:  # a per-row bias: added by one tensor shard only
            p = p | {"b_down": p["b_down"] * (jax.lax.axis_index("tensor") == 0).astype(p["b_down"].dtype)}
        shard = jax.lax.axis_index("expert") if "expert" in reduce else 0
        y = local_routed(p, spec, x.reshape(-1, x.shape[-1]), impl, block, shard).reshape(x.shape)
        return jax.lax.psum(y, reduce) if reduce else y

    run = _shard_map(local, mesh=mesh, in_specs=(specs, x_spec), out_specs=x_spec, check_vma=False)
    return run(routed, x)


# the routed experts' parameters and the logical axes of one layer's slice (jaxeval.models.sharding.RULES;
# D as "hidden", whole: the tokens' width); the router and its biases replicated
_ROUTED = ("router", "router_bias", "score_bias", "w_gate", "w_up", "w_down", "b_gate", "b_up", "b_down")
_ROUTED_AXES = {"w_gate": ("experts", "hidden", "moe_mlp"), "w_up": ("experts", "hidden", "moe_mlp"),
                "w_down": ("experts", "moe_mlp", "hidden"), "b_gate": ("experts", "moe_mlp"),
                "b_up": ("experts", "moe_mlp"), "b_down": ("experts", "hidden")}
