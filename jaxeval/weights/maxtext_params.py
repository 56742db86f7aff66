"""MaxText parameters onto jaxeval's parameter table, every MaxText transformation undone.

MaxText's per-layer kernels are already in jaxeval's [in..., out...] layout (query [embed, heads, head_dim],
out [heads, head_dim, embed], wi/wo [embed, mlp] / [mlp, embed], experts [experts, embed, mlp]); what
differs is where the layer axis sits (axis 1 when scanned: `param_scan_axis`, one leaf per layer when
not, Gemma 3's six-layer pattern slots plus `layers_remainder`) and the transformations listed in
docs/provenance.md (query scale folded in, Llama 3.1's interleaved RoPE dims, Gemma's 1 + w norms and
sqrt(d)-scaled table, MaxText's padded vocabulary).

Only the parameter leaves are restored (an Orbax partial restore: a training state's optimizer
state is never read). On a mesh each leaf is restored straight into a sharding over the same mesh axes
as its target (each process reading only its chunks), then moved into place by one jitted function
per parameter whose output sharding is the target's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxeval.errors import CheckpointError
from jaxeval.models.config import ModelConfig
from jaxeval.models.param_layout import param_shapes
from jaxeval.weights.maxtext_config import MaxTextStyle
from jaxeval.weights.maxtext_layout import MaxTextTree

_ATTN = {"wq": "self_attention/query/kernel", "wk": "self_attention/key/kernel",
         "wv": "self_attention/value/kernel", "wo": "self_attention/out/kernel",
         "q_norm": "self_attention/query_norm/scale", "k_norm": "self_attention/key_norm/scale"}
_MLP = {"w_gate": "mlp/wi_0/kernel", "w_up": "mlp/wi_1/kernel", "w_down": "mlp/wo/kernel"}
_LLAMA_NORMS = {"attn_norm": "pre_self_attention_layer_norm/scale",
                "mlp_norm": "post_self_attention_layer_norm/scale"}


def _moe(block: str) -> dict:
    module = "MoeBlock_0" if block == "mixtral" else "moe_block"  # maxtext/models/mixtral.py, qwen3.py
    return {"router": f"{module}/gate/kernel", "moe_gate": f"{module}/wi_0", "moe_up": f"{module}/wi_1",
            "moe_down": f"{module}/wo"}


# decoder_block -> our layer parameter -> its leaf under one MaxText layer (maxtext/models/<block>.py)
LAYER_LEAVES = {
    "llama2": _ATTN | _MLP | _LLAMA_NORMS, "mistral": _ATTN | _MLP | _LLAMA_NORMS,
    "qwen3": _ATTN | _MLP | _LLAMA_NORMS,
    "mixtral": _ATTN | _moe("mixtral") | _LLAMA_NORMS, "qwen3_moe": _ATTN | _moe("qwen3_moe") | _LLAMA_NORMS,
    "gemma3": _ATTN | _MLP | {"attn_norm": "pre_self_attention_norm/scale", "post_attn_norm": "post_self_attention_norm/scale",
                              "mlp_norm": "pre_ffw_norm/scale", "post_mlp_norm": "post_ffw_norm/scale"},
    # maxtext/models/gemma2.py: one MaxText layer holds two of ours, its modules suffixed _local and _global
    "gemma2": {name: leaf.replace("/", "{slot}/", 1) for name, leaf in (_ATTN | _MLP).items() if "_norm" not in name}
    | {"attn_norm": "pre_self_attention_norm{slot}/scale", "post_attn_norm": "post_self_attention_norm{slot}/scale",
       "mlp_norm": "pre_ffw_norm{slot}/scale", "post_mlp_norm": "post_ffw_norm{slot}/scale"},
    # maxtext/models/gpt_oss.py GptOssDecoderLayer: biased attention with sinks, RoutedMoE with biased experts
    "gpt_oss": {"attn_norm": "pre_self_attention_layer_norm/scale", "mlp_norm": "post_self_attention_layer_norm/scale",
                **{ours: f"GptOssAttention/{leaf}" for ours, leaf in (
                    ("wq", "query/kernel"), ("bq", "query/bias"), ("wk", "key/kernel"), ("bk", "key/bias"),
                    ("wv", "value/kernel"), ("bv", "value/bias"), ("wo", "out/kernel"), ("bo", "out/bias"),
                    ("sinks", "sinks"))},
                **{ours: f"GptOssMlp/{leaf}" for ours, leaf in (
                    ("router", "gate/kernel"), ("router_bias", "gate/bias"), ("moe_gate", "wi_0"),
                    ("moe_gate_bias", "wi_0_bias"), ("moe_up", "wi_1"), ("moe_up_bias", "wi_1_bias"),
                    ("moe_down", "wo"), ("moe_down_bias", "wo_bias"))}},
    # maxtext/models/deepseek.py DeepSeekDenseLayer / DeepSeekMoELayer, layers/attention_mla.py MLA
    "deepseek": {"attn_norm": "pre_self_attention_layer_norm/scale", "mlp_norm": "post_self_attention_layer_norm/scale",
                 **{ours: f"self_attention/{leaf}" for ours, leaf in (
                     ("mla_q_a", "wq_a/kernel"), ("mla_q_a_norm", "q_norm/scale"), ("mla_q_b", "wq_b/kernel"),
                     ("mla_kv_a", "wkv_a/kernel"), ("mla_kv_a_norm", "kv_norm/scale"), ("mla_kv_b", "wkv_b/kernel"),
                     ("mla_o", "out/kernel"))},
                 **_MLP,
                 **{ours: f"DeepSeekMoeBlock_0/{leaf}" for ours, leaf in (
                     ("router", "MoeBlock_0/gate/kernel"),
                     ("moe_gate", "MoeBlock_0/wi_0"), ("moe_up", "MoeBlock_0/wi_1"), ("moe_down", "MoeBlock_0/wo"),
                     ("shared_gate", "shared_experts/wi_0/kernel"), ("shared_up", "shared_experts/wi_1/kernel"),
                     ("shared_down", "shared_experts/wo/kernel"))}},
}
# Our layer stack -> MaxText's decoder module holding it (DeepSeek's first_num_dense_layers sit in dense_layers,
# its MoE layers in moe_layers: maxtext/layers/nnx_decoders.py); "layers" everywhere else.
_MT_STACKS = {"deepseek": {"dense_layers": "dense_layers", "layers": "moe_layers"}}
# DeepSeek's routed gate bias is an NNX MoEBiasVar (maxtext/layers/moe.py), not a parameter: a training state keeps it
# under nnx_aux/model/, stacked on axis 0 when scanned (nnx_decoders.py _build_linen_params); with routed_bias=False
# the model has none (zeros: the routing is unbiased).
_SCORE_BIAS = "DeepSeekMoeBlock_0/MoeBlock_0/gate/bias"
_PAIR = ("_local", "_global")  # Gemma 2's layer 2j is pair j's local (sliding) half, layer 2j + 1 its global one
TOP_LEAVES = {"embed": "token_embedder/embedding", "final_norm": "decoder/decoder_norm/scale",
              "lm_head": "decoder/logits_dense/kernel"}
_NORMS = frozenset({"attn_norm", "mlp_norm", "post_attn_norm", "post_mlp_norm", "q_norm", "k_norm", "final_norm"})


def _layer_sources(tree: MaxTextTree, style: MaxTextStyle, sub: str, layers: int,
                   stack: str = "layers") -> list[tuple[str, str]]:
    """The leaves holding one layer parameter, in layer order, each with how its layers lie:
    "scan" (layer axis 1, all layers), "slot" (Gemma 3 pattern slot, Gemma 2 pair half: axis 1 = its blocks),
    "one" (one layer)."""
    if style.paired:
        if tree.scanned:
            return [(f"decoder/layers/{sub.format(slot=half)}", "slot") for half in _PAIR]
        return [(f"decoder/layers_{j}/{sub.format(slot=half)}", "one") for j in range(layers // 2) for half in _PAIR]
    if not tree.scanned:
        return [(f"decoder/{stack}_{i}/{sub}", "one") for i in range(layers)]
    if style.pattern == 1:
        return [(f"decoder/{stack}/{sub}", "scan")]
    blocks, rest = divmod(layers, style.pattern)
    slots = [(f"decoder/layers/layers_{k}/{sub}", "slot") for k in range(style.pattern)] if blocks else []
    return slots + [(f"decoder/layers_remainder/layers_{j}/{sub}", "one") for j in range(rest)]


def _plan(tree: MaxTextTree, c: ModelConfig, style: MaxTextStyle) -> dict:
    """our name -> (our shape, [(leaf, kind)]), every leaf's shape checked against the config first."""
    shapes = param_shapes(c)
    table = LAYER_LEAVES[style.block]
    plan = {}
    for name, shape in shapes.items():
        if not isinstance(shape, dict):
            plan[name] = (shape, [(TOP_LEAVES[name], "top")])
    blocks = c.num_layers // style.pattern
    for stack, layers in shapes.items():
        if not isinstance(layers, dict):
            continue
        mt_stack = _MT_STACKS.get(style.block, {}).get(stack, "layers")
        for name, shape in layers.items():
            if name == "moe_score_bias":
                plan[(stack, name)] = (shape, _score_bias_sources(tree, style, shape[0], mt_stack))
                continue
            if name not in table:
                raise CheckpointError(f"{tree.items}: jaxeval's {c.model_type} needs parameter {name!r}, which "
                                      f"jaxeval's MaxText reader has no leaf for (decoder_block={style.block})")
            plan[(stack, name)] = (shape, _layer_sources(tree, style, table[name], shape[0], mt_stack))
    for name, (shape, sources) in plan.items():
        for leaf, kind in sources:
            if kind == "zeros":
                continue
            meta = tree.aux.get(leaf) if leaf.startswith("nnx_aux/") else tree.leaves.get(leaf)
            if meta is None:
                raise CheckpointError(f"{tree.items}: MaxText leaf {leaf} is missing (the config implies "
                                      f"{'scanned' if tree.scanned else 'unscanned'} decoder_block={style.block})")
            want = _stored_shape(shape, kind, blocks)
            got = tuple(meta.shape)
            vocab_padded = name == "embed" and got[1:] == want[1:] and got[0] >= want[0] or (
                name == "lm_head" and got[0] == want[0] and got[1] >= want[1])
            if got != want and not vocab_padded:
                raise CheckpointError(f"{tree.items}: MaxText leaf {leaf} has shape {list(got)}, the config implies "
                                      f"{list(want)}")
    return plan


def _score_bias_sources(tree: MaxTextTree, style: MaxTextStyle, layers: int, stack: str) -> list[tuple[str, str]]:
    if not style.routed_bias:
        return [("", "zeros")]
    where = f"nnx_aux/model/decoder/{stack}"
    sources = ([(f"{where}/{_SCORE_BIAS}", "scan0")] if tree.scanned else
               [(f"{where}_{i}/{_SCORE_BIAS}", "one") for i in range(layers)])
    if any(leaf not in tree.aux for leaf, _ in sources):
        raise CheckpointError(f"{tree.items}: routed_bias=True but the routed gate bias is not in the checkpoint (looked "
                              f"for {sources[0][0]}, where MaxText's training state keeps it; a checkpoint of a model "
                              "without it needs routed_bias=False)")
    return sources


def _stored_shape(ours: tuple, kind: str, blocks: int) -> tuple:
    if kind in ("top", "scan0"):
        return tuple(ours)
    per_layer = tuple(ours[1:])
    if kind == "one":
        return per_layer
    count = ours[0] if kind == "scan" else blocks
    return (*per_layer[:1], count, *per_layer[1:])


def _deinterleave(w):
    """LLaMARotaryEmbedding rotates dims (2i, 2i+1); Hugging Face rotates (i, i + d/2)."""
    return jnp.concatenate([w[..., 0::2], w[..., 1::2]], axis=-1)


def _assemble(arrays, sources):
    """The MaxText leaves of one layer parameter -> [layers, ...] in our layer order."""
    scans = [a if kind == "scan0" else jnp.moveaxis(a, 1, 0) for a, (_, kind) in zip(arrays, sources)
             if kind in ("scan", "slot", "scan0")]
    ones = [a[None] for a, (_, kind) in zip(arrays, sources) if kind == "one"]
    if sources[0][1] == "slot":  # slot k's block j is layer pattern * j + k
        stacked = jnp.stack(scans, axis=1)
        scans = [stacked.reshape(-1, *stacked.shape[2:])]
    return jnp.concatenate(scans + ones, axis=0) if len(scans + ones) > 1 else (scans + ones)[0]


def _fix(name: str, w, c: ModelConfig, style: MaxTextStyle):
    """Undo MaxText's transformation of our parameter `name` (docs/provenance.md cites each one), in float32
    at least (a bfloat16 checkpoint's query x sqrt(head_dim) and norm - 1 are then rounded once, at the cast)."""
    if jnp.issubdtype(w.dtype, jnp.floating) and jnp.finfo(w.dtype).bits < 32:
        w = w.astype(jnp.float32)
    if name in ("wq", "wk") and style.rope_interleaved:
        w = _deinterleave(w)
    if name == "wq" and style.query_folded:
        w = w * jnp.asarray(math.sqrt(c.head_dim), w.dtype)
    if name in _NORMS and style.norm_plus_one:
        w = w - jnp.asarray(1.0, w.dtype)
    if name == "embed":
        w = w[: c.vocab_size]
        if style.embed_normalized:
            w = w / jnp.asarray(math.sqrt(c.hidden_size), w.dtype)
    if name == "lm_head":
        w = w[:, : c.vocab_size]
    return w


def _source_sharding(target, shape: tuple, kind: str):
    """A sharding for a stored leaf over the target's mesh axes (layer axis moved to 1, or dropped)."""
    spec = list(target.spec) + [None] * (len(shape) + 1 - len(target.spec))
    if kind == "one":
        spec = spec[1:]
    elif kind in ("scan", "slot"):
        spec = [spec[1], spec[0] if kind == "scan" else None, *spec[2:]]
    spec = spec[: len(shape)]
    mesh = target.mesh
    for i, axes in enumerate(spec):
        names = axes if isinstance(axes, tuple) else (axes,) if axes else ()
        if shape[i] % math.prod(mesh.shape[a] for a in names):
            spec[i] = None
    return NamedSharding(mesh, PartitionSpec(*spec))


def _path(tree: MaxTextTree, leaf: str) -> list[str]:
    if leaf.startswith("nnx_aux/"):
        return leaf.split("/")
    return [*tree.root, *leaf.split("/"), *(["value"] if tree.value_leaves else [])]


def _meta(tree: MaxTextTree, leaf: str):
    return tree.aux[leaf] if leaf.startswith("nnx_aux/") else tree.leaves[leaf]


def _restore(tree: MaxTextTree, leaves: list[str], shardings: list | None) -> list:
    import orbax.checkpoint as ocp

    item, args = {}, {}
    for i, leaf in enumerate(leaves):
        path = _path(tree, leaf)
        node_i, node_a = item, args
        for k in path[:-1]:
            node_i, node_a = node_i.setdefault(k, {}), node_a.setdefault(k, {})
        meta = _meta(tree, leaf)
        node_i[path[-1]] = meta
        node_a[path[-1]] = (ocp.RestoreArgs(restore_type=np.ndarray) if shardings is None else
                            ocp.ArrayRestoreArgs(sharding=shardings[i], global_shape=tuple(meta.shape)))
    try:
        out = ocp.PyTreeCheckpointer().restore(tree.items, args=ocp.args.PyTreeRestore(
            item=item, restore_args=args, partial_restore=True))
    except Exception as e:  # Orbax/TensorStore raise many types for corrupt data
        raise CheckpointError(f"{tree.items}: cannot restore MaxText parameters ({type(e).__name__}: {e})") from None
    result = []
    for leaf in leaves:
        node = out
        for k in _path(tree, leaf):
            node = node[k]
        result.append(node)
    return result


def check_maxtext_params(tree: MaxTextTree, c: ModelConfig, style: MaxTextStyle) -> None:
    """Every leaf the config implies is present with the implied shape (one line naming the first that is not)."""
    _plan(tree, c, style)


def load_maxtext_params(tree: MaxTextTree, c: ModelConfig, style: MaxTextStyle, dtype,
                        shardings: dict | None = None) -> dict:
    """Our nested dict of arrays (numpy without shardings; global jax arrays in them with), cast to dtype."""
    plan = _plan(tree, c, style)
    params: dict = {}
    for key, (shape, sources) in plan.items():
        name = key[1] if isinstance(key, tuple) else key
        target = (shardings or {}).get(key[0], {}).get(name) if isinstance(key, tuple) else (shardings or {}).get(key)
        leaves = [leaf for leaf, _ in sources]
        if sources[0][1] == "zeros":  # a parameter the MaxText model lacks and ours holds as zeros
            out = np.zeros(shape, dtype) if target is None else jax.jit(
                lambda: jnp.zeros(shape, dtype), out_shardings=target)()
        elif target is None:
            arrays = _restore(tree, leaves, None)
            with jax.default_device(jax.devices("cpu")[0]):
                w = _fix(name, _assemble([jnp.asarray(a) for a in arrays], sources)
                         if isinstance(key, tuple) else jnp.asarray(arrays[0]), c, style)
                out = np.asarray(w.astype(dtype))
        else:
            arrays = _restore(tree, leaves, [_source_sharding(target, tuple(_meta(tree, leaf).shape), kind)
                                             for leaf, kind in sources])
            layered = isinstance(key, tuple)

            def move(*arrays, name=name, sources=sources, layered=layered):
                w = _assemble(list(arrays), sources) if layered else arrays[0]
                return _fix(name, w, c, style).astype(dtype)

            out = jax.jit(move, out_shardings=target)(*arrays)
        if tuple(out.shape) != tuple(shape):
            raise CheckpointError(f"{tree.items}: parameter {name} assembled as {list(out.shape)}, "
                                  f"expected {list(shape)}")
        if isinstance(key, tuple):
            params.setdefault(key[0], {})[name] = out
        else:
            params[name] = out
    return params
