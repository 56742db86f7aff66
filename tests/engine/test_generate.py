"""Generation: greedy parity with transformers, batching, EOS / stop strings, sampling, shape discipline."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxeval
from jaxeval.engine.decode_row import decode_block
from jaxeval.engine.generate import Generation, check_generate_request, generate
from jaxeval.engine.read import read
from jaxeval.engine.kv_cache import KVCache, QuantizedKVCache, decode_step, prefill_rows
from jaxeval.engine.runtime import Runtime
from jaxeval.engine.sampling import choose_tokens, prompt_keys, top_p_filter
from jaxeval.errors import InputTooLongError
from jaxeval.models.attention import xla_attention
from jaxeval.models.decode_attention import decode_attention
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import forward_logits
from jaxeval.models.param_layout import param_shapes
from jaxeval.models.rope import rope_tables, row_tables

TOKENIZER_DIR = Path(jaxeval.__file__).parent / "assets" / "tiny_llama"


def tiny(model_type="llama", seed=0, **extra):
    """A small random model with weights spread enough for varied, well-separated greedy choices."""
    raw = dict(model_type=model_type, vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=1024, rope_theta=10000.0,
               eos_token_id=2)
    config = config_from_hf(raw | extra)
    rng = np.random.default_rng(seed)

    def draw(path, shape):
        name = jax.tree_util.keystr(path)
        if "norm" in name:
            return (0.0 if config.norm_plus_one else 1.0) + 0.3 * rng.standard_normal(shape)
        return (1.0 if "embed" in name else 2 / math.sqrt(config.hidden_size)) * rng.standard_normal(shape)

    shapes = param_shapes(config)
    is_shape = lambda x: isinstance(x, tuple)  # noqa: E731
    params = jax.tree_util.tree_map_with_path(lambda p, s: jnp.asarray(draw(p, s), jnp.float32), shapes,
                                              is_leaf=is_shape)
    return config, params


def runtime_of(params, **settings) -> Runtime:
    """The Runtime of a generation over params: their dtype (the cache's), and the settings given."""
    return Runtime(dtype=params["embed"].dtype.name, **settings)


def prompts_of(lengths, vocab, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(3, vocab, n).tolist() for n in lengths]


# ---------------------------------------------------------------- parity with transformers' greedy generate

try:
    import torch
    import transformers
except ImportError:  # torch is a test extra: the parity tests need it, the rest do not
    torch = transformers = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (pip install torch) for transformers' models")

COMMON = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=512, bos_token_id=1, eos_token_id=2, pad_token_id=0)
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(COMMON, num_hidden_layers=2, rms_norm_eps=1e-5,
                                                      rope_parameters={"rope_type": "default", "rope_theta": 1e4})),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(COMMON, num_hidden_layers=2, tie_word_embeddings=True,
                                                      rope_parameters={"rope_type": "default", "rope_theta": 1e6})),
    # untied: with Gemma's embedding scale, tied random weights just repeat the last token
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        COMMON, num_hidden_layers=4, head_dim=16, query_pre_attn_scalar=24, sliding_window=40,
        tie_word_embeddings=False, attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
        hidden_activation="gelu_pytorch_tanh", rope_parameters={"rope_type": "default", "rope_theta": 1e4})),
}
PROMPT_LENGTHS = (5, 61, 150)  # one batch; with prefill_chunk=64 the longest prompt takes three chunks
NEW_TOKENS = 24  # the 150-token prompt ends at position 173: sliding windows of 40 are crossed in prefill and decode
MARGIN = 1e-4  # the reference's top-2 logit margin at every step: far above float32 noise, so no near-ties


def build_hf(name: str, folder: Path, seed: int = 0):
    config_class, model_class, kwargs = FAMILIES[name]
    config = getattr(transformers, config_class)(**kwargs, attn_implementation="eager")
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(config)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():  # no weight at its 0/1 initial value; matrices large enough for varied greedy tokens
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * (0.3 if p.ndim == 1 else 2 / math.sqrt(p.shape[-1])))
    model.eval().save_pretrained(folder)
    return model


def hf_greedy(model, prompt, max_new_tokens):
    """transformers' greedy generate of one prompt -> (new tokens, top-2 logit margin at each step)."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=max_new_tokens,
                             output_scores=True, return_dict_in_generate=True)
    scores = torch.stack(out.scores)[:, 0].float()
    top2 = scores.topk(2, dim=-1).values
    return out.sequences[0, len(prompt):].tolist(), (top2[:, 0] - top2[:, 1]).numpy()


@needs_torch
@pytest.mark.parametrize("name,backend", [("llama", "chunked"), ("qwen2", "chunked"), ("gemma2", "chunked"),
                                          pytest.param("gemma2", "xla", marks=pytest.mark.slow)])
def test_greedy_matches_transformers(name, backend, tmp_path):
    hf_model = build_hf(name, tmp_path)
    model = jaxeval.load_model(tmp_path, dtype="float32", attention=backend, prefill_chunk=64)
    prompts = prompts_of(PROMPT_LENGTHS, COMMON["vocab_size"], seed=1)
    got = model.generate(prompts, NEW_TOKENS)  # all three prompts decode together in one batch
    assert len(got) == len(prompts) and all(isinstance(g, Generation) for g in got)
    for i, (prompt, g) in enumerate(zip(prompts, got)):
        expected, margins = hf_greedy(hf_model, prompt, NEW_TOKENS)
        assert margins.min() > MARGIN, f"{name} prompt {i}: near-tie in the reference, pick another seed"
        assert g.tokens == expected, f"{name}/{backend} prompt {i} (length {len(prompt)})"
        assert g.finish_reason == ("eos" if expected[-1] == 2 else "length")
        assert g.text == ""  # this folder has no tokenizer


# ---------------------------------------------------------------- batching, compilation, limits
# These tests share one model, prefill chunk and cache bucket (256 positions), with batches of 1 or
# 4 rows, so they share four compilations.

SMALL = dict(model_type="gemma2", head_dim=8, sliding_window=24, query_pre_attn_scalar=16, tie_word_embeddings=False,
             attn_logit_softcapping=20.0, final_logit_softcapping=15.0)
CHUNK = 32


@pytest.fixture(scope="module")
def small():
    return tiny(**SMALL)


def test_batch_composition_changes_nothing(small):
    """A prompt gets the same tokens alone, in a full batch, or beside a padding row."""
    config, params = small
    prompts = prompts_of((3, 90, 17, 64), config.vocab_size)
    for temperature in (0.0, 1.0):
        runs = [[g.tokens for g in generate(params, config, runtime_of(params, prefill_chunk=CHUNK), prompts, 16,
                                            temperature=temperature, top_p=0.9, seed=7, batch_size=batch_size)]
                for batch_size in (4, 1, 3)]  # 3: one batch of 4 rows with a padding row, one of 1 row
        assert runs[0] == runs[1] == runs[2]
        assert all(len(t) == 16 or t[-1] == 2 for t in runs[0])
        assert len({tuple(t) for t in runs[0]}) == len(prompts)  # the rows really differ


def test_no_recompilation_per_token_prompt_length_or_sampling_setting(small):
    config, params = small
    functions = (prefill_rows, decode_step)
    runtime = runtime_of(params, prefill_chunk=CHUNK)
    generate(params, config, runtime, prompts_of((10, 100, 7, 50), config.vocab_size), 20)
    generate(params, config, runtime, prompts_of((10,), config.vocab_size), 20)
    before = [f._cache_size() for f in functions]
    # same buckets (4 rows or 1, prompts and new tokens within 256 positions), other lengths and settings
    generate(params, config, runtime, prompts_of((200, 3, 31, 32), config.vocab_size, seed=1), 50,
             temperature=0.7, top_p=0.5, seed=3)
    generate(params, config, runtime, prompts_of((77, 1, 150), config.vocab_size, seed=2), 5,
             temperature=1.3)
    generate(params, config, runtime, prompts_of((129,), config.vocab_size, seed=2), 127)
    assert [f._cache_size() for f in functions] == before


def test_greedy_equals_argmax_of_the_full_forward(small):
    config, params = small
    width = 64  # causal: the logits at t only depend on ids[:t + 1], so one padded width serves every step
    next_token = jax.jit(lambda ids, t: jnp.argmax(forward_logits(params, config, ids)[0, t]))
    prompts = prompts_of((1, 30, 45), config.vocab_size, seed=4)  # a one-token prompt needs no prefill
    got = generate(params, config, runtime_of(params, prefill_chunk=CHUNK), prompts, 8)
    for prompt, g in zip(prompts, got):
        ids = np.zeros((1, width), np.int32)
        ids[0, :len(prompt)] = prompt
        for t in range(len(prompt), len(prompt) + len(g.tokens)):
            ids[0, t] = next_token(ids, t - 1)
        assert g.tokens == ids[0, len(prompt):len(prompt) + len(g.tokens)].tolist()
    first = generate(params, config, runtime_of(params, prefill_chunk=CHUNK), prompts, 1)
    assert [g.tokens for g in first] == [g.tokens[:1] for g in got]
    assert all(g.finish_reason == ("eos" if g.tokens == [2] else "length") for g in first)


def test_over_long_prompt_raises_before_compiling(small):
    config, params = small  # max_position_embeddings=1024
    before = decode_step._cache_size(), prefill_rows._cache_size()
    with pytest.raises(InputTooLongError, match=r"prompt 1 has 1010 tokens; with max_new_tokens=20 that is 1030.*"
                                                r"max_position_embeddings=1024"):
        generate(params, config, runtime_of(params), prompts_of((10, 1010), config.vocab_size), 20)
    assert (decode_step._cache_size(), prefill_rows._cache_size()) == before
    check_generate_request(prompts_of((1004,), config.vocab_size), 20, None, 0.0, 1.0, 0, config, None)  # fits


@pytest.mark.parametrize("window,softcap", [(0, None), (40, 5.0)])
def test_decode_attention_matches_the_reference(window, softcap):
    """One query against layer 1 of a stacked cache equals xla_attention over that layer's keys."""
    rng = np.random.default_rng(0)
    layers, s_len, num_kv, group, d = 3, 1024, 2, 3, 8
    cache_k, cache_v = (jnp.asarray(rng.standard_normal((layers, s_len, num_kv, d)), jnp.float32) for _ in range(2))
    q = jnp.asarray(rng.standard_normal((num_kv * group, d)), jnp.float32)
    run = jax.jit(lambda q, p: decode_attention(q, cache_k, cache_v, 1, p, window, 0.3, softcap, block_k=256))
    for position in (0, 255, 256, 700, 1023):
        expected = xla_attention(q[None, None], cache_k[1][None], cache_v[1][None], position, window, 0.3, softcap)
        np.testing.assert_allclose(run(q, position), expected[0, 0], atol=1e-5)


def test_decode_step_never_copies_the_cache(small):
    """Each layer writes its K/V in place and attention slices key blocks out of the cache: XLA's
    temporaries stay far below the cache's size (a copy per step would double the memory traffic)."""
    config, params = small
    rows, s_len = 4, 16384
    layer_cache = jnp.zeros((config.num_layers, rows, config.num_kv_heads, s_len, config.head_dim))
    ints = jnp.zeros(rows, jnp.int32)
    compiled = decode_step.lower(params, KVCache(layer_cache, layer_cache), ints, ints,
                                 prompt_keys(np.uint32(0), ints), jnp.float32(0), jnp.float32(1),
                                 row_tables(config, [1] * rows), config=config,
                                 runtime=runtime_of(params)).compile()
    analysis = compiled.memory_analysis()
    if analysis is None:
        pytest.skip("this backend reports no memory analysis")
    assert analysis.alias_size_in_bytes >= 2 * layer_cache.nbytes  # both caches donated
    assert analysis.temp_size_in_bytes < layer_cache.nbytes / 8


def test_each_run_decodes_from_its_own_cache_kind():
    """generate picks the cache kind once, from the model and runtime.kv_cache (no other branch on the kind)."""
    from jaxeval.engine.bounded_kv import SnapKVCache, StreamingCache
    from jaxeval.engine.generate import cache_type
    from jaxeval.engine.hybrid_generate import HybridDecodeCache
    from jaxeval.engine.snapkv import SnapKVMaskCache
    from jaxeval.models.kv_policy import from_flags

    config, _ = tiny()
    hybrid_config, _ = tiny("qwen3_5_text", num_hidden_layers=2, head_dim=8, linear_num_key_heads=2,
                            linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8,
                            linear_conv_kernel_dim=4, layer_types=["linear_attention", "full_attention"])
    kinds = {kind: (cache_type(config, Runtime(kv_cache=from_flags(kind))),
                    cache_type(config, Runtime(kv_cache=from_flags(kind)), bounded_kv=False))
             for kind in ("exact", "int8", "fp8", "streaming", "snapkv")}
    assert kinds == {"exact": (KVCache, KVCache), "int8": (QuantizedKVCache, QuantizedKVCache),
                     "fp8": (QuantizedKVCache, QuantizedKVCache), "streaming": (StreamingCache, KVCache),
                     "snapkv": (SnapKVCache, SnapKVMaskCache)}
    assert cache_type(hybrid_config, Runtime()) is HybridDecodeCache


def test_prompt_prefill_writes_in_place_and_never_copies_a_rows_cache():
    """prefill_rows, for every row at once or one row of four: each layer attends from its own slice of the
    rows' cache and the chunk's K/V are written after the layer scan, so XLA's temporaries stay well under
    the cache of the rows it writes (taking a row out whole, as the old one-row prefill did, copied it)."""
    config, params = tiny(num_hidden_layers=8, max_position_embeddings=16384)
    rows, s_len = 4, 8192
    layer_cache = jnp.zeros((config.num_layers, rows, config.num_kv_heads, s_len, config.head_dim))
    rope = rope_tables(config, 1000)
    for r in (1, rows):
        compiled = prefill_rows.lower(params, KVCache(layer_cache, layer_cache), jnp.zeros((r, 64), jnp.int32),
                                      jnp.int32(128), jnp.int32(rows - 1 if r == 1 else 0), rope, config=config,
                                      runtime=runtime_of(params)).compile()
        analysis = compiled.memory_analysis()
        if analysis is None:
            pytest.skip("this backend reports no memory analysis")
        assert analysis.alias_size_in_bytes >= 2 * layer_cache.nbytes  # both caches donated
        written = 2 * layer_cache.nbytes * r // rows  # K and V of the rows the chunk goes to
        assert analysis.temp_size_in_bytes < written / 2, (r, analysis.temp_size_in_bytes, written)


def test_a_long_cache_decodes_in_at_most_16_key_blocks_as_the_read_predicts():
    """Past 8,192 slots decode attention reads cache/16 keys per trip (decode_row.decode_block); the greedy
    tokens are still the read's top-1 after the prompt and each token before them."""
    assert [decode_block(s) for s in (27, 4096, 8192, 12288, 49152, 131072)] == [512, 512, 512, 768, 3072, 8192]
    config, params = tiny(max_position_embeddings=16384, seed=2)
    prompt = prompts_of((8300,), config.vocab_size, seed=9)[0]  # a 12,288-slot cache: 768-key blocks
    (got,) = generate(params, config, runtime_of(params), [prompt], 4)
    ids = np.asarray(prompt + got.tokens, np.int32)
    positions = np.arange(len(prompt), len(ids))
    assert got.tokens == read(params, config, runtime_of(params), ids, positions, ids[positions]).top1.tolist()


@pytest.mark.parametrize("prompts,kwargs,message", [
    ([1, 2, 3], {}, "prompt 0 must be a non-empty 1-D"),
    ([[1, 2], []], {}, "prompt 1 must be a non-empty"),
    ([[1, 2], [5, 97]], {}, "prompt 1 holds token id 97 outside the vocabulary"),
    ("hello", {}, "prompts must be a list"),
    ([[1, 2]], {"stop": ["\n"]}, "stop strings need a tokenizer"),
    ([[1, 2]], {"stop": [""]}, "non-empty strings"),
    ([[1, 2]], {"top_p": 0.0}, "top_p must be in"),
    ([[1, 2]], {"temperature": -1.0}, "temperature must be >= 0"),
    ([[1, 2]], {"max_new_tokens": 0}, "max_new_tokens must be a positive integer"),
    ([[1, 2]], {"batch_size": 0}, "batch_size must be a positive integer"),
    ([[1, 2]], {"seed": -1}, r"seed must be an integer in \[0, 2\*\*32\)"),
    ([[1, 2]], {"stop_token_ids": [97]}, r"stop_token_ids must be token ids in \[0, "),
    ([[1, 2]], {"stop_token_ids": ["\n"]}, "stop_token_ids must be token ids"),
    ([[1, 2]], {"min_new_tokens": 5}, r"min_new_tokens must be an integer in \[0, max_new_tokens=4\]"),
])
def test_bad_requests_name_the_problem(small, prompts, kwargs, message):
    config, params = small
    kwargs = {"max_new_tokens": 4} | kwargs
    with pytest.raises(ValueError, match=message):
        generate(params, config, runtime_of(params), prompts, kwargs.pop("max_new_tokens"), **kwargs)


# ---------------------------------------------------------------- sampling


def test_sampling_is_reproducible_from_the_seed(small):
    config, params = small
    prompts = prompts_of((12, 50, 50), config.vocab_size, seed=5)
    prompts[2] = prompts[1]

    def run(seed, **kw):
        return [g.tokens for g in generate(params, config, runtime_of(params, prefill_chunk=CHUNK), prompts, 20,
                                           seed=seed, **{"temperature": 1.0} | kw)]

    first = run(0)
    assert run(0) == first
    assert run(0, batch_size=1) == first  # keys come from (seed, prompt index, position), not the batch
    assert run(1) != first
    assert first[1] != first[2]  # the same prompt twice: another prompt index, other draws
    greedy = run(0, temperature=0.0)
    assert greedy[1] == greedy[2]
    assert run(0, top_p=1e-6) == greedy  # a nucleus of one token is greedy
    assert run(3, temperature=1e-4) == greedy
    assert run(3, temperature=1e-30) == greedy  # logits / temperature overflow: still the argmax, never nan


def test_top_p_keeps_the_smallest_set_reaching_p():
    logits = jnp.log(jnp.array([[0.5, 0.1, 0.25, 0.15]]))
    kept = lambda p: np.isfinite(np.asarray(top_p_filter(logits, jnp.float32(p))))[0].tolist()  # noqa: E731
    assert kept(0.5) == [True, False, False, False]
    assert kept(0.6) == [True, False, True, False]  # 0.5 + 0.25 reaches 0.6
    assert kept(0.8) == [True, False, True, True]
    assert kept(1.0) == [True, True, True, True]


def test_sampled_frequencies_follow_the_tempered_nucleus():
    n = 20000
    probs = np.array([0.4, 0.3, 0.2, 0.06, 0.04])
    logits = jnp.broadcast_to(jnp.log(jnp.asarray(probs, jnp.float32)), (n, probs.size))
    keys = prompt_keys(np.uint32(0), jnp.arange(n))
    sample = jax.jit(choose_tokens)
    # temperature 2 flattens p to p ** 0.5 (renormalised); top_p 0.7 then keeps the three largest
    tokens = np.asarray(sample(logits, keys, jnp.zeros(n, jnp.int32), jnp.float32(2.0), jnp.float32(0.7)))
    tempered = np.sqrt(probs) / np.sqrt(probs).sum()
    assert tempered[:2].sum() < 0.7 <= tempered[:3].sum()
    expected = np.r_[tempered[:3] / tempered[:3].sum(), 0, 0]
    freq = np.bincount(tokens, minlength=probs.size) / n
    np.testing.assert_allclose(freq, expected, atol=0.015)
    # one key per (prompt, position): another position gives other draws
    other = np.asarray(sample(logits, keys, jnp.ones(n, jnp.int32), jnp.float32(2.0), jnp.float32(0.7)))
    assert (other != tokens).mean() > 0.3


# ---------------------------------------------------------------- EOS and stop strings (host side)


@pytest.fixture(scope="module")
def model_with_tokenizer(tmp_path_factory):
    """A Model with the embedded 4,096-id tokenizer (eos <|endoftext|> = 0) and random Llama weights."""
    folder = tmp_path_factory.mktemp("tok_llama")
    config = transformers.LlamaConfig(vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                                      eos_token_id=2, bos_token_id=None, pad_token_id=0)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape) * (0.3 if p.ndim == 1 else 1 / math.sqrt(p.shape[-1])))
    model.save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(TOKENIZER_DIR / name, folder / name)
    loaded = jaxeval.load_model(folder, dtype="float32", prefill_chunk=256)
    assert loaded.tokenizer is not None
    return loaded


@needs_torch
def test_text_eos_and_stop_strings(model_with_tokenizer):
    model = model_with_tokenizer
    tok = model.tokenizer
    prompts = [tok.encode("The history of the city"), tok.encode("In 1998, the band released")]
    free = model.generate(prompts, 40)
    for g in free:
        assert g.text == tok.decode(g.tokens, skip_special_tokens=True)
        assert g.finish_reason in ("length", "eos") and 0 not in g.tokens[:-1] and 2 not in g.tokens[:-1]

    # a stop string taken from the middle of the first text: cut there, stop at the token that completed it
    text = free[0].text
    stop = text[len(text) // 2:len(text) // 2 + 3]
    cut = model.generate(prompts, 40, stop=["\x00never", stop])
    assert cut[0].finish_reason == "stop"
    assert cut[0].text == text[:text.find(stop)]
    k = len(cut[0].tokens)
    assert cut[0].tokens == free[0].tokens[:k]
    assert stop in tok.decode(cut[0].tokens, skip_special_tokens=True)
    assert stop not in tok.decode(cut[0].tokens[:-1], skip_special_tokens=True)
    if stop not in free[1].text:
        assert cut[1] == free[1]  # the other row is unaffected

    # an EOS id from the config: the generation ends with that token
    eos = free[1].tokens[5]
    ended = generate(model.module.params(), model.config, model.runtime, prompts, 40, eos_token_ids=[eos],
                     tokenizer=tok)
    first = free[1].tokens.index(eos)
    assert ended[1].tokens == free[1].tokens[:first + 1] and ended[1].finish_reason == "eos"
    assert ended[1].text == tok.decode(free[1].tokens[:first + 1], skip_special_tokens=True)


@needs_torch
def test_tokenizer_eos_counts_as_eos(model_with_tokenizer):
    """The tokenizer's eos (<|endoftext|> = 0) ends a generation although config.json names only id 2."""
    model = model_with_tokenizer
    assert model.config.eos_token_ids == (2,) and model.tokenizer.eos_token_id == 0
    params = model.module.params()
    prompts = [model.tokenizer.encode("Once upon a time"), model.tokenizer.encode("Chapter 1")]
    free = generate(params, model.config, model.runtime, prompts, 10, tokenizer=model.tokenizer)
    # give id 0 the LM-head column of a token the first row produces: tied logits, and argmax takes id 0
    target = free[0].tokens[3]
    lm_head = params["lm_head"]
    tied = generate({**params, "lm_head": lm_head.at[:, 0].set(lm_head[:, target])}, model.config, model.runtime,
                    prompts, 10, tokenizer=model.tokenizer)
    for before, after in zip(free, tied):
        if target in before.tokens:
            j = before.tokens.index(target)
            assert after.tokens == before.tokens[:j] + [0] and after.finish_reason == "eos"
            assert after.text == model.tokenizer.decode(before.tokens[:j])
        else:
            assert after == before
