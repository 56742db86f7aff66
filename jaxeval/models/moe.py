"""Sparse mixture-of-experts feed-forward blocks, routed exactly as transformers routes each family.

Dropless: every (token, expert) pair the router picks is computed; nothing is capped. The T*k
pairs are sorted by expert and run as one grouped matmul per projection, so each expert sees only
its own tokens (cost in `moe_flops`):
  "ragged":  jax.lax.ragged_dot, which XLA runs as a grouped matmul on TPU and GPU. (On CPU jax
             0.10 lowers it densely, every group times every row; correct, but no saving.)
  "blocked": the sorted rows padded per expert to a multiple of `block` rows; a loop whose trip
             count is the number of blocks in use runs each with its expert's weights. Real savings
             on any backend; the CPU default.

Routing per family (transformers 5 `*TopKRouter` / `DeepseekV3TopkRouter`):
  qwen3_moe, qwen3_next   softmax (float32) -> top-k -> renormalise if norm_topk_prob
  qwen3_5_moe             softmax -> top-k -> always renormalise; + sigmoid-gated shared expert
  (qwen3_next also has the sigmoid-gated shared expert)
  mixtral                 softmax -> top-k -> renormalise (= softmax over the selected logits)
  gpt_oss                 logits + router bias -> top-k -> softmax over the k; expert biases and the
                          clamped SwiGLU (gate <= limit, |up| <= limit, (up + 1) * gate * sigmoid(alpha gate))
  deepseek_v3             sigmoid scores; selection on scores + e_score_correction_bias, limited to
                          the topk_group groups (of n_group) with the largest top-2 sums; weights are
                          the unbiased scores, renormalised if norm_topk_prob, times
                          routed_scaling_factor; + plain shared experts

Parameter layout (ours, [in, out]; E experts, D hidden, I expert width, Is shared width):
  router [D, E]; router_bias [E] (gpt_oss); score_bias [E] (deepseek_v3)
  w_gate, w_up [E, D, I]; w_down [E, I, D]; b_gate, b_up [E, I], b_down [E, D] (gpt_oss)
  shared_gate, shared_up [D, Is]; shared_down [Is, D]; shared_router [D] (qwen3_next, qwen3_5_moe)
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

FAMILIES = ("qwen3_moe", "qwen3_next", "qwen3_5_moe", "mixtral", "gpt_oss", "deepseek_v3")
_GATED_SHARED = ("qwen3_next", "qwen3_5_moe")


@dataclasses.dataclass(frozen=True)
class MoESpec:
    family: str  # one of FAMILIES
    num_experts: int  # E
    top_k: int  # k
    norm_topk_prob: bool = True  # qwen3_moe, qwen3_next, deepseek_v3
    n_group: int = 1  # deepseek_v3
    topk_group: int = 1  # deepseek_v3
    routed_scaling_factor: float = 1.0  # deepseek_v3
    swiglu_alpha: float = 1.702  # gpt_oss
    swiglu_limit: float = 7.0  # gpt_oss
    hidden_act: str = "silu"

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise ValueError(f"MoESpec: unknown family {self.family!r} (known: {', '.join(FAMILIES)})")

    @classmethod
    def from_hf_config(cls, cfg) -> "MoESpec":
        """From a transformers config object or a config.json dict (the text config of multimodal ones).

        Keys a config.json leaves out take the transformers class defaults of its family.
        """
        d = cfg if isinstance(cfg, dict) else cfg.to_dict()
        family = d["model_type"].removesuffix("_text")
        defaults = _HF_DEFAULTS.get(family, {})
        get = lambda key, fallback=None: d[key] if d.get(key) is not None else defaults.get(key, fallback)
        experts = d.get("num_experts") or d.get("num_local_experts") or d.get("n_routed_experts")
        return cls(family, experts, d["num_experts_per_tok"], bool(get("norm_topk_prob", True)), get("n_group", 1),
                   get("topk_group", 1), float(get("routed_scaling_factor", 1.0)), float(get("swiglu_alpha", 1.702)),
                   float(get("swiglu_limit", 7.0)), get("hidden_act", "silu"))


_HF_DEFAULTS = {"qwen3_moe": {"norm_topk_prob": False},
                "deepseek_v3": {"n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5}}


# ---- routing: x [T, D] -> (weights [T, k] float32, experts [T, k] int32) ----

def _softmax_topk(logits, k, renormalize, out_dtype):
    probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    top, experts = jax.lax.top_k(probs, k)
    if renormalize:
        top = top / jnp.sum(top, axis=-1, keepdims=True)
    return top.astype(out_dtype).astype(jnp.float32), experts


def _deepseek_v3_route(logits, score_bias, spec: MoESpec):
    T, E = logits.shape
    scores = jax.nn.sigmoid(logits.astype(jnp.float32))
    choice = scores + score_bias.astype(jnp.float32)
    per_group = choice.reshape(T, spec.n_group, E // spec.n_group)
    group_scores = jnp.sum(jax.lax.top_k(per_group, 2)[0], axis=-1)  # [T, n_group]
    _, groups = jax.lax.top_k(group_scores, spec.topk_group)
    keep = jnp.zeros((T, spec.n_group), bool).at[jnp.arange(T)[:, None], groups].set(True)
    choice = jnp.where(jnp.repeat(keep, E // spec.n_group, axis=1), choice, -jnp.inf)
    _, experts = jax.lax.top_k(choice, spec.top_k)
    weights = jnp.take_along_axis(scores, experts, axis=1)
    if spec.norm_topk_prob:
        weights = weights / (jnp.sum(weights, axis=-1, keepdims=True) + 1e-20)
    return weights * spec.routed_scaling_factor, experts


def route(p, spec: MoESpec, x):
    """x [T, D] -> (weights [T, k] float32, experts [T, k] int32), as transformers' router."""
    f = spec.family
    if f == "deepseek_v3":  # router in float32 whatever the model dtype
        logits = jnp.dot(x.astype(jnp.float32), p["router"].astype(jnp.float32))
        return _deepseek_v3_route(logits, p["score_bias"], spec)
    logits = x @ p["router"]
    if f == "gpt_oss":
        top, experts = jax.lax.top_k(logits + p["router_bias"], spec.top_k)
        return jax.nn.softmax(top, axis=-1).astype(jnp.float32), experts
    renormalize = spec.norm_topk_prob if f in ("qwen3_moe", "qwen3_next") else True
    # qwen families cast the weights back to the model dtype; mixtral keeps them in float32
    return _softmax_topk(logits, spec.top_k, renormalize, jnp.float32 if f == "mixtral" else x.dtype)


# ---- experts over rows sorted by expert ----

_ACTIVATIONS = {"silu": jax.nn.silu, "gelu": lambda x: jax.nn.gelu(x, approximate=False),
                "gelu_pytorch_tanh": lambda x: jax.nn.gelu(x, approximate=True), "relu": jax.nn.relu}


def _activation(name):
    if name not in _ACTIVATIONS:
        raise ValueError(f"moe: unsupported hidden_act {name!r} (supported: {', '.join(_ACTIVATIONS)})")
    return _ACTIVATIONS[name]


def _glu(spec: MoESpec, gate, up):
    """The expert's hidden activation from its gate and up projections (biases already added)."""
    if spec.family == "gpt_oss":
        gate = jnp.minimum(gate, spec.swiglu_limit)
        up = jnp.clip(up, -spec.swiglu_limit, spec.swiglu_limit)
        return (up + 1) * (gate * jax.nn.sigmoid(gate * spec.swiglu_alpha))
    return _activation(spec.hidden_act)(gate) * up


def _ragged_experts(p, spec, xs, group_sizes, expert_of_row):
    """xs [M, D] sorted by expert -> [M, D] with jax.lax.ragged_dot. Rows past sum(group_sizes) (pairs
    routed to experts on other shards) come back as zeros."""
    mm = lambda a, w: jax.lax.ragged_dot(a, w.astype(a.dtype), group_sizes,
                                         preferred_element_type=jnp.float32).astype(a.dtype)
    expert_of_row = jnp.minimum(expert_of_row, group_sizes.shape[0] - 1)  # the bias rows of foreign pairs: unused
    gate, up = mm(xs, p["w_gate"]), mm(xs, p["w_up"])
    if spec.family == "gpt_oss":
        gate, up = gate + p["b_gate"][expert_of_row], up + p["b_up"][expert_of_row]
    out = mm(_glu(spec, gate, up), p["w_down"])
    if spec.family == "gpt_oss":
        out = out + p["b_down"][expert_of_row]
    here = jnp.arange(xs.shape[0]) < jnp.sum(group_sizes)
    return jnp.where(here[:, None], out, 0)


def default_block(rows: int, num_experts: int) -> int:
    """Rows per block of the blocked dispatch: about the mean rows per expert, a power of two <= 128."""
    return int(min(128, 2 ** math.ceil(math.log2(max(1, -(-rows // num_experts))))))


def num_blocks(rows: int, num_experts: int, block: int) -> int:
    """Static upper bound on sum_e ceil(n_e / block) over any split of `rows` into E groups."""
    return rows // block + min(num_experts, rows)


def blocked_rows(group_sizes, block: int):
    """Rows the blocked dispatch actually computes for these group sizes (int scalar)."""
    return jnp.sum(-(-group_sizes // block)) * block


def _blocked_experts(p, spec, xs, group_sizes, expert_of_row, block):
    """xs [M, D] sorted by expert -> [M, D]: per-expert blocks of `block` rows, a loop over the used ones."""
    M, D = xs.shape
    E = group_sizes.shape[0]
    nb = num_blocks(M, E, block)
    padded = -(-group_sizes // block) * block  # [E]
    padded_end = jnp.cumsum(padded)
    start = jnp.cumsum(group_sizes) - group_sizes
    here = expert_of_row < E  # False: a pair routed to an expert on another shard (sorted last, never run)
    e_row = jnp.minimum(expert_of_row, E - 1)
    dest = (padded_end - padded)[e_row] + jnp.arange(M) - start[e_row]  # [M] row in blocks
    dest = jnp.where(here, dest, nb * block)  # out of range: dropped on the way in, zeros on the way out
    rows = jnp.zeros((nb * block, D), xs.dtype).at[dest].set(xs, mode="drop")
    # block b belongs to the first expert whose padded rows end after its first row
    block_expert = jnp.sum(padded_end[None, :] <= (jnp.arange(nb) * block)[:, None], axis=1)
    block_expert = jnp.minimum(block_expert, E - 1)  # blocks past the last used one: never run

    def one_block(b, out):  # rows b*block ... (b+1)*block - 1 all belong to expert block_expert[b]
        w = lambda name: jax.lax.dynamic_index_in_dim(p[name], block_expert[b], keepdims=False)
        xb = jax.lax.dynamic_slice_in_dim(rows, b * block, block)  # [block, D]
        gate, up = xb @ w("w_gate").astype(xb.dtype), xb @ w("w_up").astype(xb.dtype)
        if spec.family == "gpt_oss":
            gate, up = gate + w("b_gate"), up + w("b_up")
        yb = _glu(spec, gate, up) @ w("w_down").astype(xb.dtype)
        if spec.family == "gpt_oss":
            yb = yb + w("b_down")
        return jax.lax.dynamic_update_slice_in_dim(out, yb.astype(out.dtype), b * block, axis=0)

    # the trip count is the number of blocks in use (dynamic): unused blocks cost nothing
    out = jax.lax.fori_loop(0, padded_end[-1] // block, one_block, jnp.zeros_like(rows))
    return jnp.take(out, dest, axis=0, mode="fill", fill_value=0)


def routed_experts(p, spec: MoESpec, x, weights, experts, impl="auto", block=None):
    """x [T, D]; weights, experts [T, k] -> sum_k weights * expert(x) [T, D] (sorted dispatch).

    The experts are those of p (its leading dimension E, all spec.num_experts or one shard's); an id
    of E or more names an expert held elsewhere: its pair is sorted last, not computed, and adds 0.
    """
    T, D = x.shape
    k, E = experts.shape[1], p["w_gate"].shape[0]
    flat = experts.reshape(-1)  # [M = T*k]
    order = jnp.argsort(flat, stable=True)  # sorted row r is pair order[r] = (token order[r] // k, slot)
    group_sizes = jnp.zeros(E, jnp.int32).at[flat].add(1, mode="drop")  # foreign ids (>= E) dropped
    xs = x[order // k]  # [M, D]: each (token, slot) pair's token row, grouped by expert (group_sizes [E] rows each)
    if impl == "auto":
        from jaxeval.models.platform import traced_platform  # the target's, in an ahead-of-time compile

        impl = "blocked" if traced_platform() == "cpu" else "ragged"
    if impl == "ragged":
        ys = _ragged_experts(p, spec, xs, group_sizes, flat[order])
    elif impl == "blocked":
        ys = _blocked_experts(p, spec, xs, group_sizes, flat[order], block or default_block(T * k, E))
    else:
        raise ValueError(f"routed_experts: impl must be 'auto', 'ragged' or 'blocked', not {impl!r}")
    y = jnp.zeros_like(ys).at[order].set(ys).reshape(T, k, D)  # back to (token, slot) order
    # [T, k, D] x router weights [T, k] -> [T, D]: each token's k expert outputs, weighted and summed
    return jnp.einsum("tkd,tk->td", y.astype(jnp.float32), weights).astype(x.dtype)


def _shared_mlp(p, spec, x):
    h = _activation(spec.hidden_act)(x @ p["shared_gate"]) * (x @ p["shared_up"])
    return h @ p["shared_down"]


def local_routed(p, spec: MoESpec, x, impl="auto", block=None, shard=0):
    """Route x [T, D] and run the experts p holds: shard `shard` of E / len(p["w_gate"]) equal shards."""
    weights, experts = route(p, spec, x)
    held = p["w_gate"].shape[0]
    local = experts - shard * held
    local = jnp.where((local >= 0) & (local < held), local, held)  # held elsewhere: the id `held`
    return routed_experts(p, spec, x, weights, local, impl, block)


def sparse_moe(p, spec: MoESpec, x, impl="auto", block=None, routed=None):
    """The family's sparse MoE block. x [..., D] -> [..., D] (no residual, no norm).

    routed: how the routed experts run, routed(p, spec, x, impl, block) -> [..., D] on x's shape
    (jaxeval.models.moe_parallel.expert_parallel_routed on a mesh with an `expert` axis); None: here,
    with XLA partitioning them from the weights' shardings on a mesh."""
    shape = x.shape
    with jax.named_scope("sparse_moe"):  # the block's name in profiles
        if routed is not None:
            y = routed(p, spec, x, impl, block).reshape(-1, shape[-1])
            x = x.reshape(-1, shape[-1])
        else:
            x = x.reshape(-1, shape[-1])
            y = local_routed(p, spec, x, impl, block)
        if spec.family in _GATED_SHARED:
            y = y + jax.nn.sigmoid(x @ p["shared_router"][:, None]) * _shared_mlp(p, spec, x)
        elif spec.family == "deepseek_v3":
            y = y + _shared_mlp(p, spec, x)
        return y.reshape(shape)


def moe_flops(num_tokens: int, spec: MoESpec, hidden: int, inter: int, shared_inter: int = 0,
              block: int | None = None) -> dict:
    """Matmul FLOPs of one MoE block over num_tokens tokens (2 per multiply-add).

    dense_all_experts: every expert on every token (what a one-hot einsum costs);
    routed: the T*k pairs the router picks (the ragged path on TPU/GPU);
    blocked_max: the blocked path's worst case (every block of the static bound used);
    router, shared: the router projection and the shared expert(s), the same in every scheme.
    """
    per_row = 2 * hidden * inter * 3  # gate, up, down
    rows = num_tokens * spec.top_k
    shared_gate = 2 * num_tokens * hidden if spec.family in _GATED_SHARED else 0
    block = block or default_block(rows, spec.num_experts)
    return {"dense_all_experts": num_tokens * spec.num_experts * per_row, "routed": rows * per_row,
            "blocked_max": num_blocks(rows, spec.num_experts, block) * block * per_row,
            "router": 2 * num_tokens * hidden * spec.num_experts,
            "shared": num_tokens * 2 * hidden * shared_inter * 3 + shared_gate}


# ---- Hugging Face (transformers 5 module state dict, names relative to the block) -> ours ----

def params_from_hf(sd, spec: MoESpec) -> dict:
    """transformers' fused expert tensors -> our layout (numpy). sd: the sparse block's state dict.

    Qwen/Mixtral/DeepSeek keep experts.gate_up_proj [E, 2I, D] (gate rows, then up rows) and
    experts.down_proj [E, D, I]; gpt-oss keeps gate_up_proj [E, D, 2I] with gate and up
    interleaved (even, odd columns), its biases, and down_proj [E, I, D].
    """
    a = lambda name: np.asarray(sd[name])
    p = {"router": a("router.weight" if spec.family == "gpt_oss" else "gate.weight").T}
    if spec.family == "gpt_oss":
        gu, gub = a("experts.gate_up_proj"), a("experts.gate_up_proj_bias")
        p |= {"router_bias": a("router.bias"), "w_gate": gu[..., ::2], "w_up": gu[..., 1::2],
              "b_gate": gub[:, ::2], "b_up": gub[:, 1::2], "w_down": a("experts.down_proj"),
              "b_down": a("experts.down_proj_bias")}
        return p
    gu = a("experts.gate_up_proj")
    inter = gu.shape[1] // 2
    p |= {"w_gate": gu[:, :inter].transpose(0, 2, 1), "w_up": gu[:, inter:].transpose(0, 2, 1),
          "w_down": a("experts.down_proj").transpose(0, 2, 1)}
    if spec.family == "deepseek_v3":
        p |= {"score_bias": a("gate.e_score_correction_bias"), "shared_gate": a("shared_experts.gate_proj.weight").T,
              "shared_up": a("shared_experts.up_proj.weight").T, "shared_down": a("shared_experts.down_proj.weight").T}
    if spec.family in _GATED_SHARED:
        p |= {"shared_gate": a("shared_expert.gate_proj.weight").T, "shared_up": a("shared_expert.up_proj.weight").T,
              "shared_down": a("shared_expert.down_proj.weight").T, "shared_router": a("shared_expert_gate.weight")[0]}
    return p
