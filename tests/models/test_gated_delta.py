"""Gated DeltaNet: the chunk-wise rule equals the recurrent one, and the layer equals transformers'.

Sequences span 5 full chunks of 64 and 3 more tokens; states are carried across splits that fall
inside a chunk. Every check has a negative control: a plausible mistake must move the result by
more than CONTROL (100x the tolerance).
"""

from __future__ import annotations

import copy
import functools

import jax
import numpy as np
import pytest

from jaxeval.models import gated_delta as gd

TOL = 1e-5  # float32, max abs difference
CONTROL = 100 * TOL
# 323 tokens: 5 full chunks of 64 and 3 more; prefill splits at 160 (inside the third chunk) into two
# pieces of the same length (one compile), and the last 3 tokens are decoded one at a time
B, T, SPLIT = 2, 5 * 64 + 3, 160
D, HK, HV, DK, DV, K = 32, 2, 4, 16, 8, 4
DIMS = gd.GDNDims(D, HK, HV, DK, DV, K)

chunk_rule = jax.jit(gd.chunk_gated_delta_rule)
recurrent_rule = jax.jit(gd.recurrent_gated_delta_rule)
layer = jax.jit(gd.gated_delta_net, static_argnames=("mode", "eps"))


def max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def rule_inputs(seed, decay):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)
    a_log = np.log(rng.uniform(*decay, HV)).astype(np.float32)
    g, beta = gd.gates(f(B, T, HV), f(B, T, HV), a_log, np.full(HV, -2.0, np.float32))
    return f(B, T, HK, DK), f(B, T, HK, DK), f(B, T, HV, DV), np.asarray(g), np.asarray(beta)


@pytest.mark.parametrize("decay", [(0.01, 0.1), (1.0, 16.0)], ids=["slow_decay", "fast_decay"])
def test_chunk_rule_equals_recurrent_with_carried_state(decay):
    q, k, v, g, beta = rule_inputs(0, decay)
    ref_o, ref_S = recurrent_rule(q, k, v, g, beta)
    assert float(np.abs(ref_o).max()) > 0.1
    piece = lambda i: lambda t: t[:, i * SPLIT:(i + 1) * SPLIT]
    last = lambda t: t[:, 2 * SPLIT:]
    S0 = np.zeros((B, HV, DK, DV), np.float32)  # explicit, so both pieces share one compile
    o1, S1 = chunk_rule(*map(piece(0), (q, k, v, g, beta)), S0)
    o2, S2 = chunk_rule(*map(piece(1), (q, k, v, g, beta)), S1)
    o3, S3 = recurrent_rule(*map(last, (q, k, v, g, beta)), S2)  # decode continues the chunked prefill
    assert max_diff(np.concatenate([o1, o2, o3], 1), ref_o) <= TOL and max_diff(S3, ref_S) <= TOL

    # control: the second piece restarted from a zero state
    o_reset, _ = chunk_rule(*map(piece(1), (q, k, v, g, beta)), S0)
    assert max_diff(o_reset, piece(1)(ref_o)) > CONTROL
    # control: value head h reading key head h % Hk (a tile) instead of h // r (torch's repeat_interleave).
    # With Hk = 2, Hv = 4 that is the right mapping applied to value heads reordered 0, 2, 1, 3 (and back).
    order = [0, 2, 1, 3]
    o_bad, _ = recurrent_rule(q, k, v[:, :, order], g[:, :, order], beta[:, :, order])
    assert max_diff(o_bad[:, :, order], ref_o) > CONTROL


# ---- the layer against transformers ----

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def randomize(module, seed):
    """Every parameter random; A_log and dt_bias give per-token decays of 0.5-5%, so state lives for chunks."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name == "A_log":
                p.copy_(torch.log(torch.rand(p.shape, generator=gen) * 0.09 + 0.01))
            elif name == "dt_bias":
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3 - 2.0)
            elif name == "norm.weight":
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.15)
    return module.eval()


@functools.cache
def hf_layer(kind):
    common = dict(hidden_size=D, linear_num_key_heads=HK, linear_num_value_heads=HV, linear_key_head_dim=DK,
                  linear_value_head_dim=DV, linear_conv_kernel_dim=K, num_hidden_layers=1,
                  layer_types=["linear_attention"], rms_norm_eps=1e-6)
    if kind == "qwen3_5":
        from transformers.models.qwen3_5.configuration_qwen3_5 import Qwen3_5TextConfig
        from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet
        cfg = Qwen3_5TextConfig(**common)
        module, convert = Qwen3_5GatedDeltaNet(cfg, 0), gd.params_from_hf_qwen3_5
    else:
        from transformers import Qwen3NextConfig
        from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextGatedDeltaNet
        cfg = Qwen3NextConfig(**common)
        module, convert = Qwen3NextGatedDeltaNet(cfg, 0), gd.params_from_hf_qwen3_next
    assert gd.GDNDims.from_hf_config(cfg) == DIMS
    module = randomize(module, seed=1 if kind == "qwen3_5" else 2)
    x = torch.randn(B, T, D, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = module(x).numpy()
        ref64 = copy.deepcopy(module).double()(x.double()).numpy()  # how close float32 can get
    sd = {k: v.numpy() for k, v in module.state_dict().items()}
    return sd, convert(sd, DIMS), x.numpy(), ref, ref64


@pytest.mark.parametrize("kind", ["qwen3_5", "qwen3_next"])
def test_layer_matches_transformers(kind):
    sd, p, x, ref, ref64 = hf_layer(kind)
    assert float(np.abs(ref).max()) > 0.5
    y, _ = layer(p, x)  # one chunked call over the whole sequence
    assert max_diff(y, ref) <= TOL and max_diff(y, ref64) <= TOL

    # prefill in two pieces split inside a chunk, then decode the last 3 tokens one at a time
    y1, s1 = layer(p, x[:, :SPLIT], gd.init_state(B, DIMS))
    y2, s2 = layer(p, x[:, SPLIT:2 * SPLIT], s1)
    ys, state = [y1, y2], s2
    for t in range(2 * SPLIT, T):
        y_t, state = layer(p, x[:, t:t + 1], state, mode="recurrent")
        ys.append(y_t)
    assert max_diff(np.concatenate(ys, 1), ref) <= TOL
    assert state.recurrent.shape == (B, HV, DK, DV) and state.conv_q.shape == (B, K - 1, HK, DK)

    # control: the conv state dropped at the split (recurrent state still carried)
    zero_conv = s1._replace(conv_q=0 * s1.conv_q, conv_k=0 * s1.conv_k, conv_v=0 * s1.conv_v)
    y2_bad, _ = layer(p, x[:, SPLIT:2 * SPLIT], zero_conv)
    assert max_diff(y2_bad, ref[:, SPLIT:2 * SPLIT]) > CONTROL
    # control: the gated norm's weight applied as (1 + w), as Qwen3.5's other RMSNorms are
    y_bad, _ = layer({**p, "norm": 1.0 + p["norm"]}, x)
    assert max_diff(y_bad, ref) > CONTROL
    if kind == "qwen3_next":  # control: the fused projections read as contiguous q | k | v | z blocks
        kd, vd = HK * DK, HV * DV
        qkvz, ba = sd["in_proj_qkvz.weight"], sd["in_proj_ba.weight"]
        flat = {**sd, "in_proj_qkv.weight": qkvz[:2 * kd + vd], "in_proj_z.weight": qkvz[2 * kd + vd:],
                "in_proj_b.weight": ba[:HV], "in_proj_a.weight": ba[HV:]}
        y_bad, _ = layer(gd.params_from_hf_qwen3_5(flat, DIMS), x)
        assert max_diff(y_bad, ref) > CONTROL


def test_padded_tail_leaves_state_untouched():
    """A right-padded chunk with `lengths` gives the unpadded chunk's outputs and states."""
    _, p, x, _, _ = hf_layer("qwen3_5")
    _, s1 = layer(p, x[:, :SPLIT], gd.init_state(B, DIMS))
    chunk = x[:, SPLIT:2 * SPLIT].copy()
    n = np.array([SPLIT, 90], np.int32)  # row 0 is full, row 1 holds 90 tokens and padding
    chunk[1, 90:] = 7.0  # what the padding holds must not matter
    y, s = layer(p, chunk, s1, lengths=n)
    y_full, s_full = layer(p, chunk, s1)  # row 0's reference; row 1 ran the padding into its states
    state = s1  # row 1's reference: its 90 valid tokens decoded one at a time
    for t in range(90):
        y_t, state = layer(p, chunk[:, t:t + 1], state, mode="recurrent")
        assert max_diff(y[1, t], y_t[1, 0]) <= TOL
    assert max_diff(y[0], y_full[0]) <= TOL
    for got, full, short in zip(s, s_full, state):
        assert max_diff(got[0], full[0]) <= TOL and max_diff(got[1], short[1]) <= TOL
    # control: without lengths the padding runs into row 1's states
    assert max_diff(s_full.recurrent[1], s.recurrent[1]) > CONTROL
    assert max_diff(s_full.conv_v[1], s.conv_v[1]) > CONTROL
