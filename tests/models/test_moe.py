"""Sparse MoE blocks against transformers' own torch modules, family by family, and the dispatch paths.

Each family's sparse block is built from a tiny config with transformers' classes, every parameter
(and DeepSeek's score-correction buffer) randomised, copied into our layout, and compared in
float32. Negative controls route the same tokens with a plausible mistake (the other family's
softmax / renormalisation order, no group limit, no clamp) through the same expert computation and
must move the output by more than CONTROL. The controls and the dispatch checks use a numpy
all-experts-on-all-tokens sum as the second implementation of the expert computation.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from jaxeval.models import moe

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOL = 1e-5
CONTROL = 100 * TOL
D, B, T = 32, 2, 37  # 74 tokens

routed = jax.jit(moe.routed_experts, static_argnames=("spec", "impl", "block"))


@functools.partial(jax.jit, static_argnames="spec")
def sparse_moe_and_routing(p, spec, x):
    """The block's output [B, T, D] and its routing (weights, experts [B*T, k]): one compile per family."""
    return moe.sparse_moe(p, spec, x), *moe.route(p, spec, x.reshape(-1, x.shape[-1]))


def dense_experts(p, spec, x, weights, experts, limit=None):
    """numpy: every expert on every token, then the routed pairs summed: x [N, D] -> [N, D]."""
    gate = np.einsum("nd,edi->eni", x, p["w_gate"])
    up = np.einsum("nd,edi->eni", x, p["w_up"])
    if spec.family == "gpt_oss":
        limit = spec.swiglu_limit if limit is None else limit
        gate, up = np.minimum(gate + p["b_gate"][:, None], limit), np.clip(up + p["b_up"][:, None], -limit, limit)
        h = (up + 1) * gate / (1 + np.exp(-spec.swiglu_alpha * gate))
    else:
        h = gate / (1 + np.exp(-gate)) * up
    out = np.einsum("eni,eid->end", h, p["w_down"])  # [E, N, D]
    if spec.family == "gpt_oss":
        out = out + p["b_down"][:, None]
    n = np.arange(x.shape[0])
    return sum(weights[:, s, None] * out[experts[:, s], n] for s in range(experts.shape[1]))


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def hf_case(family):
    """(transformers config, sparse block class) for a tiny config of the family."""
    if family == "qwen3_moe":
        from transformers import Qwen3MoeConfig
        from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock
        return Qwen3MoeConfig(hidden_size=D, moe_intermediate_size=16, num_experts=8, num_experts_per_tok=2), \
            Qwen3MoeSparseMoeBlock  # norm_topk_prob left at its default, False
    if family == "qwen3_next":
        from transformers import Qwen3NextConfig
        from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextSparseMoeBlock
        return Qwen3NextConfig(hidden_size=D, moe_intermediate_size=16, shared_expert_intermediate_size=24,
                               num_experts=8, num_experts_per_tok=3), Qwen3NextSparseMoeBlock
    if family == "qwen3_5_moe":
        from transformers.models.qwen3_5_moe.configuration_qwen3_5_moe import Qwen3_5MoeTextConfig
        from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import Qwen3_5MoeSparseMoeBlock
        return Qwen3_5MoeTextConfig(hidden_size=D, moe_intermediate_size=16, shared_expert_intermediate_size=24,
                                    num_experts=8, num_experts_per_tok=2), Qwen3_5MoeSparseMoeBlock
    if family == "mixtral":
        from transformers import MixtralConfig
        from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
        return MixtralConfig(hidden_size=D, intermediate_size=16, num_local_experts=8, num_experts_per_tok=2), \
            MixtralSparseMoeBlock
    if family == "gpt_oss":
        from transformers import GptOssConfig
        from transformers.models.gpt_oss.modeling_gpt_oss import GptOssMLP
        # a low clamp limit, so that the clamp acts on these activations
        return GptOssConfig(hidden_size=D, intermediate_size=16, num_local_experts=8, num_experts_per_tok=2,
                            swiglu_limit=1.0), GptOssMLP
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE
    return DeepseekV3Config(hidden_size=D, moe_intermediate_size=16, n_routed_experts=16, num_experts_per_tok=4,
                            n_group=4, topk_group=2, n_shared_experts=2, routed_scaling_factor=2.5), DeepseekV3MoE


@functools.cache
def hf_block(family):
    cfg, cls = hf_case(family)
    cfg._experts_implementation = "eager"  # the reference loop over experts, not a fused kernel
    gen = torch.Generator().manual_seed(len(family))
    block = cls(cfg).eval()
    with torch.no_grad():
        for tensor in [*block.parameters(), *block.buffers()]:  # buffers: DeepSeek's e_score_correction_bias
            tensor.copy_(torch.randn(tensor.shape, generator=gen) * 0.15)
        x = torch.randn(B, T, D, generator=gen)
        ref = block(x)
    ref = ref[0] if isinstance(ref, tuple) else ref  # gpt-oss also returns the router scores
    spec = moe.MoESpec.from_hf_config(cfg)
    p = moe.params_from_hf({k: v.numpy() for k, v in block.state_dict().items()}, spec)
    return spec, p, x.numpy(), ref.numpy()


# ---- plausible routing mistakes, in numpy: x [N, D] -> (weights [N, k], experts [N, k]) ----

def _softmax(z):
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _top(scores, k):
    experts = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(scores, experts, -1), experts


def softmax_topk(renormalize):
    def route(p, spec, x):
        w, e = _top(_softmax(x @ p["router"]), spec.top_k)
        return (w / w.sum(-1, keepdims=True) if renormalize else w), e
    return route


def gpt_oss_softmax_before_topk(p, spec, x):
    return _top(_softmax(x @ p["router"] + p["router_bias"]), spec.top_k)


def deepseek_without_group_limit(p, spec, x):
    scores = 1 / (1 + np.exp(-(x @ p["router"])))
    _, e = _top(scores + p["score_bias"], spec.top_k)
    w = np.take_along_axis(scores, e, -1)
    return w / w.sum(-1, keepdims=True) * spec.routed_scaling_factor, e


MISTAKES = {  # family -> (what the mistake is, its router)
    "qwen3_moe": ("renormalised top-k (norm_topk_prob ignored)", softmax_topk(True)),
    "qwen3_next": ("top-k not renormalised", softmax_topk(False)),
    "qwen3_5_moe": ("top-k not renormalised (Qwen3-MoE's default)", softmax_topk(False)),
    "mixtral": ("softmax before top-k without renormalising", softmax_topk(False)),
    "gpt_oss": ("softmax over all experts before top-k", gpt_oss_softmax_before_topk),
    "deepseek_v3": ("no group-limited selection", deepseek_without_group_limit),
}


@pytest.mark.parametrize("family", moe.FAMILIES)
def test_sparse_block_matches_transformers(family):
    spec, p, x, ref = hf_block(family)
    assert 0.3 < float(np.abs(ref).max()) < 10
    y, w, e = sparse_moe_and_routing(p, spec, x)  # the CPU default: blocked dispatch
    assert max_diff(y, ref) <= TOL, family

    # control: the same tokens routed with the mistake (experts and shared part unchanged)
    what, mistaken_route = MISTAKES[family]
    xt, y = x.reshape(-1, D), np.asarray(y).reshape(-1, D)
    w, e = np.asarray(w), np.asarray(e)
    shared_part = y - dense_experts(p, spec, xt, w, e)
    y_bad = shared_part + dense_experts(p, spec, xt, *mistaken_route(p, spec, xt))
    assert max_diff(y_bad, ref.reshape(-1, D)) > CONTROL, what
    if family == "gpt_oss":  # its expert biases take their own path in the ragged dispatch; no shared part
        assert max_diff(routed(p, spec, xt, w, e, impl="ragged"), ref.reshape(-1, D)) <= TOL
        # control: the clamp of its SwiGLU left out
        y_bad = shared_part + dense_experts(p, spec, xt, w, e, limit=np.inf)
        assert max_diff(y_bad, ref.reshape(-1, D)) > CONTROL
    if family == "deepseek_v3":  # control: the score-correction bias left out of the selection
        y_bad, _, _ = sparse_moe_and_routing({**p, "score_bias": 0 * p["score_bias"]}, spec, x)
        assert max_diff(y_bad, ref) > CONTROL


def test_spec_from_config_json_defaults():
    """Keys a config.json leaves out take the transformers class defaults."""
    spec = moe.MoESpec.from_hf_config({"model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8})
    assert spec.norm_topk_prob is False  # Qwen3MoeConfig's default; a default of True would renormalise
    ds = moe.MoESpec.from_hf_config({"model_type": "deepseek_v3", "n_routed_experts": 256, "num_experts_per_tok": 8})
    assert (ds.n_group, ds.topk_group, ds.routed_scaling_factor, ds.norm_topk_prob) == (8, 4, 2.5, True)
    text = moe.MoESpec.from_hf_config({"model_type": "qwen3_5_moe_text", "num_experts": 8, "num_experts_per_tok": 2})
    assert text.family == "qwen3_5_moe"


def test_dispatch_paths_agree_on_skewed_routing():
    """Blocked (several block sizes) and ragged dispatch equal a dense all-experts sum, with empty experts."""
    spec, p, x, ref = hf_block("qwen3_moe")  # the test's numpy experts checked against transformers first
    xt = x.reshape(-1, D)
    N, E, k = xt.shape[0], spec.num_experts, spec.top_k
    rng = np.random.default_rng(0)
    experts = np.stack([np.full(N, 3), rng.choice([0, 1, 2, 4, 7], N)], 1).astype(np.int32)  # 5, 6 unused
    experts[::5] = experts[::5, ::-1]  # expert 3 in either slot
    weights = rng.uniform(0.1, 1.0, (N, k)).astype(np.float32)

    dense = dense_experts(p, spec, xt, weights, experts)
    _, w, e = sparse_moe_and_routing(p, spec, x)
    assert max_diff(dense_experts(p, spec, xt, np.asarray(w), np.asarray(e)), ref.reshape(-1, D)) <= TOL

    assert max_diff(routed(p, spec, xt, weights, experts, impl="ragged"), dense) <= TOL
    group_sizes = np.bincount(experts.ravel(), minlength=E)
    for block in (8, 64):  # 8: several blocks per expert, the last one padded; 64: mostly padding
        assert max_diff(routed(p, spec, xt, weights, experts, impl="blocked", block=block), dense) <= TOL
        rows = int(moe.blocked_rows(group_sizes, block))
        assert N * k <= rows <= moe.num_blocks(N * k, E, block) * block
        assert rows < N * E  # the dense all-experts scheme computes N * E rows
    # control: the grouped matmul fed the rows in token order rather than sorted by expert
    # (group sizes right, rows misaligned with them): what skipping the sort would do
    unsorted = moe._ragged_experts(p, spec, np.repeat(xt, k, axis=0), group_sizes, np.sort(experts.ravel()))
    y_bad = np.einsum("nkd,nk->nd", np.asarray(unsorted).reshape(N, k, D), weights)
    assert max_diff(y_bad, dense) > CONTROL


def test_moe_flops_routed_is_k_over_e_of_dense():
    """Qwen3-30B-A3B shapes (E 128, k 8, D 2048, I 768) over a 4,096-token chunk."""
    spec = moe.MoESpec("qwen3_moe", 128, 8, norm_topk_prob=True)
    f = moe.moe_flops(4096, spec, hidden=2048, inter=768)
    assert f["dense_all_experts"] == 4096 * 128 * 2 * 2048 * 768 * 3
    assert f["routed"] * 16 == f["dense_all_experts"]
    assert moe.default_block(4096 * 8, 128) == 128  # 256 rows per expert on average, capped at 128
    assert f["blocked_max"] == (4096 * 8 // 128 + 128) * 128 * 2 * 2048 * 768 * 3  # <= 1.5x routed
    assert f["routed"] < f["blocked_max"] <= 1.5 * f["routed"]
    decode = moe.moe_flops(1, spec, hidden=2048, inter=768)  # one token: 8 blocks of 1 row
    assert moe.default_block(8, 128) == 1 and decode["blocked_max"] == 2 * decode["routed"]


@pytest.mark.parametrize("impl", ["blocked", "ragged"])
def test_foreign_expert_ids_are_not_computed_and_add_nothing(impl):
    """One expert shard's view: ids >= the experts it holds (after the shard offset) contribute zero, and its
    output equals the full block restricted to the pairs routed to its experts."""
    spec = moe.MoESpec("gpt_oss", 8, 2)
    rng = np.random.default_rng(3)
    D, I, E, T = 16, 8, 8, 40
    p = {"router": rng.normal(size=(D, E)), "router_bias": rng.normal(size=E), "w_gate": rng.normal(size=(E, D, I)),
         "w_up": rng.normal(size=(E, D, I)), "w_down": rng.normal(size=(E, I, D)), "b_gate": rng.normal(size=(E, I)),
         "b_up": rng.normal(size=(E, I)), "b_down": rng.normal(size=(E, D))}
    p = {k: jax.numpy.asarray(v, jax.numpy.float32) for k, v in p.items()}
    x = jax.numpy.asarray(rng.normal(size=(T, D)), jax.numpy.float32)
    weights, experts = moe.route(p, spec, x)
    full = np.zeros((T, D), np.float32)
    for shard in range(4):  # four shards of two experts each add up to the whole block
        held = {k: (v[2 * shard:2 * shard + 2] if k.startswith(("w_", "b_")) else v) for k, v in p.items()}
        part = moe.local_routed(held, spec, x, impl=impl, shard=shard)
        mine = (experts // 2 == shard)
        want = moe.routed_experts(p, spec, x, jax.numpy.where(mine, weights, 0.0), experts, impl="blocked")
        np.testing.assert_allclose(np.asarray(part), np.asarray(want), atol=2e-4, rtol=1e-5)
        full += np.asarray(part)
    np.testing.assert_allclose(full, np.asarray(moe.routed_experts(p, spec, x, weights, experts)), atol=5e-4, rtol=1e-5)


def test_expert_axis_splits_the_experts_and_matches_one_device():
    """On 8 simulated devices (a subprocess): each device holds E / expert experts, and the expert-parallel block
    equals the one-device block for every family's routing, with the width also over tensor and tokens over
    data or context."""
    import json, os, subprocess, sys  # noqa: E401
    script = '''
import json, jax, jax.numpy as jnp, numpy as np
import functools
from jaxeval.models import moe
from jaxeval.models.moe_parallel import expert_parallel_routed
from jaxeval.models.mesh import make_mesh
from jaxeval.models.sharding import sharding
rng = np.random.default_rng(0)
D, I, E = 16, 8, 8
p = {"router": rng.normal(size=(D, E)), "router_bias": rng.normal(size=E), "score_bias": rng.normal(size=E),
     "w_gate": rng.normal(size=(E, D, I)), "w_up": rng.normal(size=(E, D, I)), "w_down": rng.normal(size=(E, I, D)),
     "b_gate": rng.normal(size=(E, I)), "b_up": rng.normal(size=(E, I)), "b_down": rng.normal(size=(E, D)),
     "shared_gate": rng.normal(size=(D, I)), "shared_up": rng.normal(size=(D, I)), "shared_down": rng.normal(size=(I, D))}
p = {k: jnp.asarray(v, jnp.float32) for k, v in p.items()}
x = jnp.asarray(rng.normal(size=(2, 64, D)), jnp.float32)
ONLY = {"b_": "gpt_oss", "router_bias": "gpt_oss", "shared": "deepseek_v3", "score_bias": "deepseek_v3"}
out = {}
for spec in (moe.MoESpec("qwen3_moe", E, 2), moe.MoESpec("gpt_oss", E, 2), moe.MoESpec("deepseek_v3", E, 2, n_group=4, topk_group=2)):
    keep = {k: v for k, v in p.items() if all(spec.family == f or not k.startswith(pre) for pre, f in ONLY.items())}
    ref = moe.sparse_moe(keep, spec, x)
    for m in ("expert=8", "expert=2,tensor=2,context=2", "data=2,expert=4"):
        mesh = make_mesh(m)
        held = dict(keep, w_gate=jax.device_put(keep["w_gate"], sharding(keep["w_gate"].shape, ("experts", "embed", "moe_mlp"), mesh)))
        got = jax.jit(lambda p, x: moe.sparse_moe(p, spec, x, routed=functools.partial(expert_parallel_routed, mesh)))(held, x)
        rows = {s.data.shape[0] for s in held["w_gate"].addressable_shards}
        out[spec.family + " " + m] = [float(jnp.abs(got - ref).max() / jnp.abs(ref).max()), sorted(rows)]
print(json.dumps(out))
'''
    env = os.environ | {"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(out) == 9
    for case, (rel, rows) in out.items():
        assert rel < 1e-6, case
        assert rows == [8 // int(case.split("expert=")[1][0])], case  # 8 experts


def test_expert_axis_refused_without_experts_or_when_it_does_not_divide_them():
    from types import SimpleNamespace
    from jaxeval.models.mesh import MeshError
    from jaxeval.models.sharding import check_mesh_fits
    mesh = SimpleNamespace(shape={"data": 1, "fsdp": 1, "expert": 4, "tensor": 1, "context": 1})
    dense = SimpleNamespace(moe=None, num_heads=4, num_kv_heads=2, linear_attention=None, layer_types=None)
    with pytest.raises(MeshError, match="expert=4 needs a mixture-of-experts model"):
        check_mesh_fits(dense, mesh)
    sparse = SimpleNamespace(**{**vars(dense), "moe": moe.MoESpec("mixtral", 6, 2)})
    with pytest.raises(MeshError, match="expert=4 does not divide the model's 6 routed experts"):
        check_mesh_fits(sparse, mesh)
