"""The dense families of issue 12 beyond parity of reads: Orbax copies of their layouts, greedy decoding
against transformers' generate, and the bfloat16 order of OLMo 2's RMSNorm. Models from test_parity.py."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from test_parity import all_positions, built, compare  # noqa: E402, F401 (built: the fixture)


@pytest.mark.parametrize("built", ["phi4-mini", "olmo2"], indirect=True)
def test_orbax_copy_of_new_layouts(built, tmp_path):
    """jaxeval convert keeps the split fused weights, the post-norm-only layout and the all-heads q/k norms:
    the Orbax copy reads exactly as the safetensors folder."""
    positions, tokens = all_positions(built)
    from jaxeval.weights.loader import convert

    convert(built.folder, tmp_path / "orbax", dtype="float32")
    a = jaxeval.load_model(tmp_path / "orbax", dtype="float32", attention="xla").read(built.ids, positions, tokens)
    b = jaxeval.load_model(built.folder, dtype="float32", attention="xla").read(built.ids, positions, tokens)
    np.testing.assert_array_equal(a.logprobs, b.logprobs)
    compare(built, a, positions, tokens, f"{built.family.name}/orbax")


# Decoding runs attention_inputs / layer_output one token at a time against the stacked cache: the families
# whose extra features act per position or per layer there (sliding windows, NoPE, post norms, interleaved
# partial rotary, multipliers, the position-scaled queries of Ministral 3).
GENERATION_FAMILIES = ("phi3", "olmo3", "smollm3", "glm4", "granite", "exaone4", "ministral3")


@pytest.mark.parametrize("built", GENERATION_FAMILIES, indirect=True)
def test_greedy_generation_matches_transformers(built):
    """32 greedy tokens after a 400-token prompt (longer than the sliding windows), as transformers generates."""
    from jaxeval.engine.generate import generate as engine_generate

    prompt = built.ids[:400]
    built.hf_model.generation_config.eos_token_id = None
    with torch.no_grad():
        expected = built.hf_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=32, do_sample=False,
                                           pad_token_id=0)[0, prompt.size:].tolist()
    model = jaxeval.load_model(built.folder, dtype="float32", prefill_chunk=256, load_tokenizer=False)
    got = engine_generate(model.module.params(), model.config, model.runtime, [prompt], 32,
                          eos_token_ids=())
    assert got[0].tokens == expected


def test_rms_norm_weight_order_in_bfloat16():
    """OLMo 2/3's RMSNorm multiplies by its weight before casting back to bfloat16, Llama's after: the flag
    norm_scale_float32 reproduces each, elementwise (float32 runs cannot tell the two apart)."""
    import jax.numpy as jnp
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from transformers.models.olmo2.modeling_olmo2 import Olmo2RMSNorm

    from jaxeval.models.decoder import rms_norm

    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 256, generator=g).to(torch.bfloat16)
    w = (1 + 0.3 * torch.randn(256, generator=g)).to(torch.bfloat16)
    to_jax = lambda t: jnp.asarray(t.float().numpy(), jnp.bfloat16)  # noqa: E731
    got = {}
    for name, cls, in_float32 in (("llama", LlamaRMSNorm, False), ("olmo2", Olmo2RMSNorm, True)):
        ref = cls(256, eps=1e-6).to(torch.bfloat16)
        with torch.no_grad():
            ref.weight.copy_(w)
            expected = ref(x).float().numpy()
        got[name] = np.asarray(rms_norm(to_jax(x), to_jax(w), 1e-6, False, in_float32).astype(jnp.float32))
        assert (got[name] == expected).mean() > 0.999, name
    assert (got["llama"] != got["olmo2"]).mean() > 0.05  # the two orders differ in bfloat16
