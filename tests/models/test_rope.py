"""Rotary embeddings: frequencies bit-identical to transformers' chain of float32 operations, angles exact
to millions of positions, every rope_type read from config.json with one clear error for what is not supported.

The parity tests at long positions (test_long_parity.py) show what these bits are worth: one float32 step
in one frequency near 1 moves a log-probability by ~1e-3 at 32k positions.
"""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

from jaxeval.errors import ConfigError
from jaxeval.models import rope as R
from jaxeval.models.config import config_from_hf

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

THETAS = (10000.0, 500000.0, 1e6, 150000.0, 75000.0)
HEAD_DIMS = (32, 64, 128, 256)


def scaled_ropes(head_dim: int, theta: float):
    """(rope_parameters, max_position_embeddings, sequence lengths) for every rope_type and its variants."""
    rng = np.random.default_rng(head_dim)
    short, long = list(1 + rng.random(head_dim // 2)), list(1 + 10 * rng.random(head_dim // 2))
    return [
        ({"rope_type": "default"}, 4096, [10]),
        ({"rope_type": "linear", "factor": 4.0}, 4096, [10]),
        ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}, 131072, [10]),
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}, 131072, [10]),  # Qwen2.5/3
        ({"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,  # gpt-oss
          "original_max_position_embeddings": 4096}, 131072, [10]),
        ({"rope_type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0,  # DeepSeek-V3
          "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}, 163840, [10]),
        ({"rope_type": "yarn", "factor": 8.0, "mscale": 0.707, "mscale_all_dim": 1.0,
          "original_max_position_embeddings": 4096}, 32768, [10]),
        ({"rope_type": "dynamic", "factor": 2.0}, 4096, [10, 4096, 4097, 8000, 16384, 33333]),
        ({"rope_type": "longrope", "short_factor": short, "long_factor": long,  # Phi-3
          "original_max_position_embeddings": 4096}, 131072, [10, 4096, 4097, 50000]),
    ]


def hf_config(rope_parameters: dict, theta: float, head_dim: int, max_positions: int):
    return transformers.LlamaConfig(vocab_size=64, hidden_size=4 * head_dim, intermediate_size=32, num_hidden_layers=1,
                                    num_attention_heads=4, num_key_value_heads=4, head_dim=head_dim,
                                    max_position_embeddings=max_positions,
                                    rope_parameters={**rope_parameters, "rope_theta": theta})


def reference(hf, kind: str, seq_len: int):
    """transformers' (inv_freq, attention_scaling), seq_len passed as its forward passes it (a tensor)."""
    if kind == "default":
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
        inv, scale = LlamaRotaryEmbedding.compute_default_rope_parameters(hf)
    else:
        inv, scale = ROPE_INIT_FUNCTIONS[kind](hf, None, seq_len=torch.tensor(seq_len))
    return inv.numpy(), scale


def torch_pow(base, exponent):
    """torch's float32 pow (SLEEF's, within one float32 step of the exact power), for R._pow."""
    exponent = (torch.from_numpy(np.asarray(exponent, np.float32)) if isinstance(exponent, np.ndarray)
                else float(exponent))
    return torch.pow(torch.tensor(np.asarray(base, np.float32)), exponent).numpy()


CASES = [(theta, hd, i) for theta, hd in itertools.product(THETAS, HEAD_DIMS) for i in range(9)]


@pytest.mark.parametrize("theta,head_dim,case", CASES)
def test_frequencies_follow_the_reference_operations(theta, head_dim, case, monkeypatch):
    """With torch's own pow swapped in, every rope_type's frequencies are bit-identical to transformers': every
    other operation (reciprocals, products, the yarn ramp, llama3's bands, dynamic NTK's float32 base) rounds
    where the reference rounds. Attention factors equal the reference's as float32."""
    params, max_positions, lengths = scaled_ropes(head_dim, theta)[case]
    hf = hf_config(params, theta, head_dim, max_positions)
    ours = config_from_hf(hf.to_dict())
    monkeypatch.setattr(R, "_pow", torch_pow)
    for seq_len in lengths:
        inv, scale = reference(hf, params["rope_type"], seq_len)
        tables = R.rope_tables(ours, seq_len)
        np.testing.assert_array_equal(tables.inv_freq[0], inv, err_msg=f"{params['rope_type']} seq_len={seq_len}")
        assert tables.scale[0] == np.float32(scale)


def test_frequencies_are_correctly_rounded_and_mostly_equal_torchs():
    """Our pow is the exact power rounded once. torch's (SLEEF, <= 1 ulp) agrees on ~99% of the frequencies;
    numpy's float32 power (AVX512 path) is worse than both: this is the bug that drifted at 32k."""
    ours_vs_torch = numpy_vs_torch = total = 0
    for theta, head_dim in itertools.product(THETAS, HEAD_DIMS):
        exponents = R._exponents(head_dim)
        exact = (np.float64(np.float32(theta)) ** exponents.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(R._pow(np.float32(theta), exponents), exact)
        torchs = torch_pow(np.float32(theta), exponents)
        ours_vs_torch += int((exact != torchs).sum())
        numpy_vs_torch += int((np.float32(theta) ** exponents != torchs).sum())
        total += exponents.size
    print(f"\nfloat32 powers differing from torch's: ours {ours_vs_torch}/{total}, numpy's {numpy_vs_torch}/{total}")
    assert ours_vs_torch <= 0.03 * total


def test_angle_reduction_is_exact_to_millions_of_positions():
    """cos/sin of float32(position) * inv_freq equal float64 cos/sin of that same float32 angle within 1.2e-7,
    for positions to 2M, whatever the backend's cos does with large arguments (the reduction: within 1e-9)."""
    positions = np.concatenate([np.arange(0, 4096), np.arange(131072 - 4096, 131072 + 4096),
                                np.random.default_rng(0).integers(0, 2 ** 21, 20000)]).astype(np.int32)
    inv_freq = R._default(10000.0, 128)
    cos, sin = jax.jit(R.rotary_cos_sin)(positions, inv_freq, np.float32(1.0))
    angles = (positions.astype(np.float32)[:, None] * inv_freq[None, :]).astype(np.float64)  # the reference's float32
    assert float(np.abs(np.asarray(cos) - np.cos(angles)).max()) < 1.2e-7
    assert float(np.abs(np.asarray(sin) - np.sin(angles)).max()) < 1.2e-7
    r, lo = jax.jit(R._reduce)(angles.astype(np.float32))
    reduced = np.asarray(r).astype(np.float64) + np.asarray(lo)
    exact = np.remainder(angles + math.pi, 2 * math.pi) - math.pi
    wrapped = np.abs(np.remainder(reduced - exact + math.pi, 2 * math.pi) - math.pi)
    assert float(wrapped.max()) < 1e-9


def test_two_pi_digits_sum_to_two_pi():
    digits, rest = R._two_pi_digits()
    assert all(float(d) * 2 ** 19 == float(np.float32(float(d) * 2 ** 19)) for d in digits)  # exact products
    assert abs(sum(float(d) for d in digits) + float(rest) - 2 * math.pi) < 1e-15
    assert abs(float(rest)) * 2 ** 19 < 1e-6


def test_nope_layers_rotate_nothing():
    """A NoPE layer's tables are zero frequencies with scale 1: cos 1, sin 0, the identity, exactly."""
    x = np.random.default_rng(0).standard_normal((1, 50, 2, 16)).astype(np.float32)
    cos, sin = R.rotary_cos_sin(np.arange(100000, 100050), np.zeros(8, np.float32), np.float32(1))
    np.testing.assert_array_equal(np.asarray(R.apply_rope(x, cos, sin)), x)


def test_partial_and_interleaved_rotation_match_torch():
    """The first R dims rotate (half-split pairs as Llama, interleaved pairs as GLM), the rest pass untouched."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 40, 3, 16)).astype(np.float32)
    positions = np.arange(30000, 30040)
    inv = R._default(10000.0, 8)
    cos, sin = R.rotary_cos_sin(positions, inv, np.float32(1.0))
    angles = torch.from_numpy(positions.astype(np.float32)[:, None] * inv[None, :])
    t = torch.from_numpy(x)
    for interleaved in (False, True):
        if interleaved:
            c, s = angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)
            part = t[..., :8]
            rotated = torch.stack((-part[..., 1::2], part[..., 0::2]), dim=-1).flatten(-2)
        else:
            c, s = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
            part = t[..., :8]
            rotated = torch.cat((-part[..., 4:], part[..., :4]), dim=-1)
        c, s = c[None, :, None, :], s[None, :, None, :]
        expected = torch.cat([part * c + rotated * s, t[..., 8:]], dim=-1).numpy()
        got = np.asarray(R.apply_rope(x, cos, sin, interleaved))
        np.testing.assert_allclose(got, expected, atol=2e-6)
        np.testing.assert_array_equal(got[..., 8:], x[..., 8:])


BASE = dict(model_type="llama", vocab_size=64, hidden_size=64, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=131072, rms_norm_eps=1e-5)


@pytest.mark.parametrize("rope,message", [
    ({"rope_type": "su"}, "rope_type='su', which jaxeval does not support (supported: default, linear, llama3, "
                          "yarn, dynamic, longrope)"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 0.5},
     "field 'rope_parameters' (rope_type='yarn') needs a positive integer 'original_max_position_embeddings'"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768, "truncate": "no"},
     "field 'rope_parameters'.truncate='no' must be true or false"),
    ({"rope_type": "longrope", "short_factor": [1.0] * 8, "original_max_position_embeddings": 4096},
     "field 'rope_parameters'.long_factor must be a non-empty list of numbers, got None"),
    ({"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
      "original_max_position_embeddings": 4096}, "longrope short_factor/long_factor have 4/4 entries; the rotary "
                                                 "dimension 16 needs 8"),
    ({"rope_type": "llama3", "factor": 8.0}, "field 'rope_parameters' (rope_type='llama3') is missing "
                                             "'low_freq_factor'"),
    ({"rope_type": "dynamic"}, "field 'rope_parameters' (rope_type='dynamic') is missing 'factor'"),
])
def test_unsupported_or_incomplete_ropes_name_the_field(rope, message):
    with pytest.raises(ConfigError) as e:
        config_from_hf({**BASE, "rope_parameters": {**rope, "rope_theta": 1e4}}, where="m/config.json")
    assert str(e.value).startswith("m/config.json: ") and message in str(e.value)


def test_partial_rotary_refused_where_the_family_rotates_whole_heads():
    with pytest.raises(ConfigError, match="field 'partial_rotary_factor'=0.5 is not supported for model_type='llama'"):
        config_from_hf({**BASE, "partial_rotary_factor": 0.5, "rope_theta": 1e4})


def test_v4_rope_scaling_replaces_v5_rope_parameters_keeping_theta():
    """transformers lets rope_scaling (a user's override, or a v4 file) win over rope_parameters."""
    config = config_from_hf({**BASE, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
                             "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                              "original_max_position_embeddings": 32768}})
    assert config.rope.kind == "yarn" and config.rope.theta == 1e6 and config.rope.factor == 4.0
    assert config.rope.attention_factor == pytest.approx(0.1 * math.log(4.0) + 1.0)


def test_length_dependent_tables_and_prefix_keys():
    """dynamic and longrope tables change with the sequence length; rope_key tells when two lengths share them."""
    dyn = config_from_hf({**BASE, "max_position_embeddings": 4096, "rope_parameters": {
        "rope_type": "dynamic", "factor": 2.0, "rope_theta": 1e4}})
    assert R.length_dependent(dyn)
    same = R.rope_tables(dyn, 100).inv_freq
    np.testing.assert_array_equal(same, R.rope_tables(dyn, 4096).inv_freq)
    assert not np.array_equal(same, R.rope_tables(dyn, 8192).inv_freq)
    assert R.rope_key(dyn, 100) == R.rope_key(dyn, 4096) != R.rope_key(dyn, 4097)
    plain = config_from_hf({**BASE, "rope_theta": 1e4})
    assert not R.length_dependent(plain) and R.rope_key(plain, 5) == R.rope_key(plain, 10 ** 6) is None
