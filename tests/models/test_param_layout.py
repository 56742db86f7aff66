"""The one parameter table: shapes, logical axes and HF layouts derived from it agree."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxeval.models.config import config_from_hf
from jaxeval.models.param_layout import LAYERS, PARAM_AXES, fused_rows, hf_name, hf_shape, param_shapes, to_ours


def config(model_type="llama", **extra):
    return config_from_hf(dict(model_type=model_type, vocab_size=97, hidden_size=32, intermediate_size=48,
                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                               max_position_embeddings=4096, rope_theta=1e4, **extra))


def test_every_shape_has_one_axis_name_per_dimension():
    c = config(tie_word_embeddings=False)
    shapes = param_shapes(c)
    for name, shape in shapes["layers"].items() | {k: v for k, v in shapes.items() if k != "layers"}.items():
        assert len(PARAM_AXES[name]) == len(shape), name
    assert shapes["layers"]["wo"] == (2, 4, 8, 32) and shapes["lm_head"] == (32, 97)


def test_hf_linear_layout_is_the_transpose_reshaped():
    w = np.arange(32 * 4 * 8).reshape(32, 4 * 8)  # HF o_proj [D, H * hd]
    ours = to_ours("wo", w, (4, 8, 32))
    assert hf_shape("wo", (4, 8, 32)) == (32, 32) and ours[1, 2, 3] == w[3, 1 * 8 + 2]
    assert hf_shape("wq", (32, 4, 8)) == (32, 32) and hf_shape("bk", (2, 8)) == (16,)


def test_fused_rows_tile_the_fused_tensor_in_order():
    c = config("phi3")
    rows = [fused_rows(n, c) for n in ("wq", "wk", "wv")]
    assert {total for total, _ in rows} == {4 * 8 + 2 * 2 * 8}
    assert [(r.start, r.stop) for _, r in rows] == [(0, 32), (32, 48), (48, 64)]
    assert hf_name("wk", c) == "self_attn.qkv_proj.weight" and fused_rows("wk", config()) is None


def test_family_names_override_the_default():
    assert hf_name("mlp_norm", config()) == "post_attention_layernorm.weight"
    assert hf_name("mlp_norm", dataclasses.replace(config(), model_type="gemma3_text")) == "pre_feedforward_layernorm.weight"
    assert hf_name("post_mlp_norm", dataclasses.replace(config(), model_type="glm4")) == "post_mlp_layernorm.weight"
    assert all(p.axes[0] == "layers" for p in LAYERS.values())
