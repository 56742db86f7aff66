"""Parity with transformers at long positions: 16k-32k tokens, every family and every rope scaling, float32.

An error that grows with position (a frequency one float32 step off, an angle formed in low precision,
a cos/sin that loses its argument past 1e5) is invisible at 300 tokens and ~1e-3 at 32k. Each case
reads every position of a random text through several prefill chunks and compares the log-probability
of the next token with transformers' forward (sdpa attention: eager would hold [heads, T, T]) over
the same ids. Tolerance: 1e-4 at every position, checked separately past 8k.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402
from jaxeval.engine.generate import generate as engine_generate  # noqa: E402
from test_parity import FAMILIES, VOCAB, reference_model  # noqa: E402

TOL = 1e-4
LONG = 16384


@dataclasses.dataclass(frozen=True)
class LongCase:
    name: str
    config_class: str
    model_class: str
    kwargs: dict
    length: int = LONG


def _llama(rope: dict, head_dim: int = 64, max_positions: int = 32768, **extra) -> dict:
    return dict(vocab_size=VOCAB, hidden_size=128, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, head_dim=head_dim, rms_norm_eps=1e-5,
                max_position_embeddings=max_positions, bos_token_id=1, eos_token_id=2, pad_token_id=0,
                rope_parameters=rope, **extra)


SCALINGS = [
    # the configuration that drifted before: head_dim 128, theta 5e5 (2.7e-4 at 12-16k with numpy's float32 pow)
    LongCase("default-hd128", "LlamaConfig", "LlamaForCausalLM",
             _llama({"rope_type": "default", "rope_theta": 500000.0}, head_dim=128)),
    LongCase("llama3", "LlamaConfig", "LlamaForCausalLM",
             _llama({"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 2048})),
    LongCase("yarn-qwen", "Qwen2Config", "Qwen2ForCausalLM",  # Qwen2.5 / Qwen3 model cards: factor 4 over 32k
             _llama({"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0, "original_max_position_embeddings": 4096},
                    max_positions=32768)),
    LongCase("yarn-gpt-oss", "LlamaConfig", "LlamaForCausalLM",
             _llama({"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                     "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 1024})),
    LongCase("yarn-deepseek-mscale", "LlamaConfig", "LlamaForCausalLM",
             _llama({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "mscale": 0.707,
                     "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1,
                     "original_max_position_embeddings": 1024})),
    LongCase("dynamic", "LlamaConfig", "LlamaForCausalLM",  # scales past max_position_embeddings=4096
             _llama({"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0}, max_positions=4096)),
    LongCase("longrope", "LlamaConfig", "LlamaForCausalLM",  # Phi-3 style: long factors past 4096
             _llama({"rope_type": "longrope", "rope_theta": 10000.0,
                     "short_factor": [1.0 + 0.05 * i for i in range(32)],
                     "long_factor": [1.0 + 1.5 * i for i in range(32)],
                     "original_max_position_embeddings": 4096}, max_positions=131072)),
]
FAMILY_CASES = [LongCase(f.name, f.config_class, f.model_class, {**f.kwargs, "max_position_embeddings": 32768})
                for f in FAMILIES]
CASES = {c.name: c for c in SCALINGS + FAMILY_CASES}
QUICK = ("default-hd128", "yarn-qwen")  # in the default run; the rest is the `long` tier


def tiered(names):
    return [n if n in QUICK else pytest.param(n, marks=pytest.mark.long) for n in names]


@dataclasses.dataclass
class Built:
    case: LongCase
    folder: object
    ids: np.ndarray  # int [T]
    ref: np.ndarray  # float32 [T - 1]: reference log p(ids[t + 1] | ids[:t + 1])
    hf_model: object


EAGER_ONLY = ("Gemma2ForCausalLM",)  # soft-capped attention: no sdpa in transformers
REFERENCE_CHUNK = 2048


def reference_logits(model, ids: np.ndarray, chunked: bool) -> torch.Tensor:
    """float32 [T, V] logits of transformers' forward over ids. chunked: in pieces through its KV cache
    (eager attention over 16k positions at once would hold [heads, T, T] scores); the same as one call."""
    tokens = torch.as_tensor(ids)[None]
    if not chunked:
        return model(tokens).logits[0].float()
    cache, pieces = transformers.DynamicCache(config=model.config), []
    for start in range(0, ids.size, REFERENCE_CHUNK):
        piece = tokens[:, start:start + REFERENCE_CHUNK]
        out = model(piece, past_key_values=cache, use_cache=True,
                    cache_position=torch.arange(start, start + piece.shape[1]))
        pieces.append(out.logits[0].float())
    return torch.cat(pieces)


def build(case: LongCase, folder, seed: int = 0) -> Built:
    eager = case.model_class in EAGER_ONLY
    model = reference_model(case.config_class, case.model_class, case.kwargs, folder, seed,
                            attention="eager" if eager else "sdpa")
    ids = np.random.default_rng(seed).integers(3, VOCAB, case.length)
    with torch.no_grad():
        logits = reference_logits(model, ids, chunked=eager)[:-1]
    ref = torch.log_softmax(logits, dim=-1).gather(1, torch.as_tensor(ids[1:])[:, None])[:, 0].numpy()
    return Built(case, folder, ids, ref, model)


@pytest.fixture(scope="module")
def built(request, tmp_path_factory):
    return build(CASES[request.param], tmp_path_factory.mktemp(request.param))


def windows(diff: np.ndarray, size: int = 4096) -> str:
    return ", ".join(f"{i // 1024}k: {diff[i:i + size].max():.1e}" for i in range(0, diff.size, size))


def check(b: Built, backend: str, chunk: int):
    model = jaxeval.load_model(b.folder, dtype="float32", attention=backend, prefill_chunk=chunk)
    positions = np.arange(1, b.ids.size)
    got = model.read(b.ids, positions, b.ids[positions]).logprobs
    diff = np.abs(got - b.ref)
    print(f"\n{b.case.name}/{backend}: max |dlogprob| {diff.max():.2e} past 8k {diff[8192:].max():.2e} "
          f"[{windows(diff)}]")
    assert diff[8192:].max() <= TOL, f"{b.case.name}/{backend} past 8k: {diff[8192:].max():.3g} [{windows(diff)}]"
    assert diff.max() <= TOL, f"{b.case.name}/{backend}: {diff.max():.3g}"


@pytest.mark.parametrize("built", tiered(CASES), indirect=True)
def test_long_parity_chunked(built):
    """The CPU default backend, 2,048-token prefill chunks (eight chunks through the KV cache)."""
    check(built, "chunked", 2048)


# Every attention feature once on the other CPU backends in the long tier (GQA, sliding windows, soft-caps,
# a local rope base, interleaved partial rotary, NoPE layers, a yarn scaling); all the other cases: -m slow.
BACKEND_CASES = ("default-hd128", "yarn-qwen", "mistral", "gemma2", "gemma3", "glm4", "smollm3")


@pytest.mark.parametrize("backend,chunk", [("xla", 4096), ("splash", 4096)])
@pytest.mark.parametrize("built", [pytest.param(n, marks=pytest.mark.long if n in BACKEND_CASES else pytest.mark.slow)
                                   for n in CASES], indirect=True)
def test_long_parity_other_backends(built, backend, chunk):
    """xla (the reference backend) and splash (Pallas, interpret mode on CPU)."""
    check(built, backend, chunk)


@pytest.mark.long
@pytest.mark.parametrize("built", ["dynamic", "longrope"], indirect=True)
def test_length_dependent_rope_generation_crosses_the_switch(built):
    """Greedy generation that starts below the length where the rope changes and ends past it: transformers
    recomputes the frequencies at every step (its cache keeps keys rotated the old way); so does jaxeval."""
    threshold = built.case.kwargs["rope_parameters"].get("original_max_position_embeddings",
                                                        built.case.kwargs["max_position_embeddings"])
    prompt = built.ids[:threshold - 8]
    built.hf_model.generation_config.eos_token_id = None  # 24 tokens whatever they are, on both sides
    with torch.no_grad():
        expected = built.hf_model.generate(torch.as_tensor(prompt)[None], max_new_tokens=24, do_sample=False,
                                           pad_token_id=0)[0, prompt.size:].tolist()
    model = jaxeval.load_model(built.folder, dtype="float32", prefill_chunk=1024, load_tokenizer=False)
    got = engine_generate(model.module.params(), model.config, model.runtime, [prompt], 24,
                          eos_token_ids=())
    assert got[0].tokens == expected


def test_the_cases_cover_every_rope_kind():
    from jaxeval.models.config import ROPE_KINDS
    kinds = {c.kwargs["rope_parameters"].get("rope_type") for c in CASES.values()
             if "rope_type" in c.kwargs["rope_parameters"]}
    assert set(ROPE_KINDS) <= kinds | {"linear"}  # linear: the Gemma 3 family case (full_attention layers)
    assert any(math.isclose(c.kwargs.get("head_dim", 0), 128) for c in CASES.values())
