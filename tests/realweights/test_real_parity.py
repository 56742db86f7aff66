"""Real weights: jaxeval against transformers on Gemma 3 270M and SmolLM2-135M, float32, 8k and 32k tokens.

The models are the GGUF checkpoints the package registry ships (Q4_K_M and Q4_1), dequantized to
float32 by scripts/build_real_models.py: real trained weights, with the activation outliers, large
logits and attention sinks that random tiny models lack. Checks, for each model:

- every position of an 8,192-token text (Tiny Shakespeare) and a 32,768-token text (WikiText-2
  test): |jaxeval - transformers| of log p(next token) and of log p(reference's top-1), reported
  as the max per 4,096-position window, tolerance 1e-4 at every position at 8k (32k: see below);
  jaxeval's top-1 equal to the reference's wherever the reference's top-2 margin exceeds 1e-3; and
  the mean NLL of the text low enough that the weights are a working language model (a broken
  conversion reads near chance: ln(vocab) = 10.8 and 12.5 nats), over the positions inside the
  model's own context.
- greedy generation of 32 tokens after a 4,096-token prompt token-identical to transformers'
  generate(do_sample=False).

The reference never holds [T, vocab] logits (Gemma's vocabulary is 262,144: 34 GB at 32k): the
transformers base model runs over the text in 4,096-token chunks through its own DynamicCache
(sdpa attention; sliding-window layers keep their window, full layers the whole prefix), then the
LM head (and the family's final logit soft-cap, if any) is applied in row blocks in float32 and
the log-softmax over the vocabulary is taken in float64, so that the reference's own summation
error (torch's float32 log_softmax over 262k entries is ~3e-5 off) does not count against jaxeval.
One forward over the whole 32k text would run Gemma's sliding layers as full attention under an
explicit mask (about 4x slower on CPU); at 8k the chunked and the one-forward reference agree to
1e-6 (median) on Gemma.

Gemma 3 270M's config allows 32,768 positions (sliding window 512, 5 local : 1 global layers).
SmolLM2-135M's allows 8,192: its 32k read raises max_position_embeddings to 32,768 through
load_model's override (default rope, so nothing else changes; transformers' rope does not read the
field), a numeric check past its trained context.

What the 32k differences are (docs/models.md "Real weights" has the figures; scripts/realweights_float64_check.py
measures them): a third opinion in float64 says neither float32 implementation holds 1e-4 there.
The differences are not a long-context drift: the median |d log p| per 4k window stays at 2-4e-6
from 0k to 32k on Gemma, and Gemma's worst position (3518, 1.2e-3) lies in the first 4k of
WikiText-2 (the 8k read is Tiny Shakespeare). They are single positions where the model amplifies
float32 rounding (rare target tokens, log p -12 to -26), and SmolLM2 past its trained 8k, where it
reads 6-8 nats and amplifies it everywhere. There transformers float32 is itself off float64 by more
than 1e-4: at Gemma's 3518 by 2.8e-4 (jaxeval 8.9e-4, on the other side), on SmolLM2 at 20-24k by up
to 1.3e-2 (jaxeval 1.2e-2; medians 6.0e-6 vs 8.6e-6). jaxeval's float32 arithmetic on CPU
is about 1.6x noisier than torch's at every layer (median relative error of the hidden states vs
float64: 5.0e-7 vs 3.1e-7 after Gemma's first layer, 1.3e-6 vs 7.5e-7 after the last): XLA:CPU's
float32 dot is (median relative error 3.9e-7 vs torch's 2.5e-7 on the models' matmul shapes,
precision="highest" changes nothing); no op of jaxeval's model code is off. So the 32k reads are
held to what float32 can promise: the median per 4k window within MEDIAN_TOL_32K (a systematic
error, such as issue 12's rope frequencies at 1.1e-2 by 32k, moves the median) and the maximum
within TOL_32K, set from the measured float32-vs-float64 errors (jaxeval's own included: at Gemma's
worst position it is the farther one, 3.2x, which bounds the pair at 1.2e-3).

Cost on 2 CPU cores: see docs/models.md "Real weights" (tens of minutes); peak memory about 6 GB.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import jaxeval  # noqa: E402

pytestmark = pytest.mark.realweights

TOL = 1e-4  # max |d log p| at every position of the 8k reads
MEDIAN_TOL_32K = 3e-5  # median |d log p| per 4k window at 32k (measured <= 3.5e-6 Gemma, <= 9.2e-6 SmolLM2 to 24k)
# max |d log p| at 32k, where both float32 implementations are more than 1e-4 off float64 at the positions the
# model amplifies rounding (see the docstring); measured pair maxima 1.2e-3 (Gemma) and 1.0e-2 (SmolLM2 past 8k)
TOL_32K = {"gemma3-270m": 2e-3, "smollm2-135m": 2e-2}
MARGIN = 1e-3  # top-1 must agree where the reference's top-2 margin exceeds this
WINDOW = 4096  # positions per reported window
REFERENCE_CHUNK = 4096  # tokens per transformers forward (through its KV cache)
HEAD_ROWS = 256  # rows of the reference's LM head at once: [256, 262144] float64 = 0.5 GB
MAX_MEAN_NLL = 5.0  # nats: far below chance for both vocabularies, far above what either model reads
MODELS = ("gemma3-270m", "smollm2-135m")
TEXTS = {  # label -> (file, first character, tokens): every position of these is read
    "8k": ("tinyshakespeare.txt", 0, 8192 + 1),
    "32k": ("wikitext2_test.txt", 0, 32768 + 1),
}
PROMPT = ("tinyshakespeare.txt", 500_000, 4096)  # generation prompt, away from the 8k text
NEW_TOKENS = 32
TEXT_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "text"  # ../shared of the checkout


class Loaded:
    """One model's folder, tokenizer, transformers model and jaxeval models (one per config override)."""

    def __init__(self, name: str, folder: Path):
        self.name, self.folder = name, folder
        self.hf = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=torch.float32, attn_implementation="sdpa").eval()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        self._jaxeval = {}

    def jaxeval_model(self, **overrides):
        key = tuple(sorted(overrides.items()))
        if key not in self._jaxeval:
            self._jaxeval.clear()  # one jaxeval copy of the weights at a time
            gc.collect()
            self._jaxeval[key] = jaxeval.load_model(self.folder, dtype="float32", attention="chunked", **overrides)
        return self._jaxeval[key]


@pytest.fixture(scope="module", params=MODELS)
def loaded(request, real_model_folder):
    model = Loaded(request.param, real_model_folder(request.param))
    yield model
    del model
    gc.collect()


def text_ids(tokenizer, file: str, first_char: int, n_tokens: int) -> np.ndarray:
    """The first n_tokens ids of the file's text from first_char on, as the model's tokenizer encodes it."""
    path = TEXT_DIR / file
    if not path.is_file():
        pytest.skip(f"{path}: text corpus not available (../shared/data/text of the checkout)")
    text = path.read_text(encoding="utf-8")[first_char:first_char + 10 * n_tokens]
    ids = np.asarray(tokenizer(text).input_ids, np.int64)
    assert ids.size >= n_tokens, f"{path}: {ids.size} tokens from character {first_char}, {n_tokens} needed"
    return ids[:n_tokens]


def reference_next_token(hf, ids: np.ndarray) -> dict[str, np.ndarray]:
    """transformers' log p(ids[p] | ids[:p]) for p = 1..T-1, its top-1, log p(top-1) and top-2 margin."""
    n = ids.size - 1
    inputs = torch.as_tensor(ids[None, :n])
    cache = transformers.DynamicCache(config=hf.config)
    hidden = []
    with torch.inference_mode():
        for start in range(0, n, REFERENCE_CHUNK):
            end = min(n, start + REFERENCE_CHUNK)
            out = hf.model(input_ids=inputs[:, start:end], position_ids=torch.arange(start, end)[None],
                           cache=cache, use_cache=True)
            hidden.append(out.last_hidden_state[0])
        del cache, out
        hidden = torch.cat(hidden)  # [n, D] float32: the final norm's output
        weight = hf.get_output_embeddings().weight  # [V, D]
        cap = getattr(hf.config, "final_logit_softcapping", None)
        targets = torch.as_tensor(ids[1:])
        logp, top1, top1_logp, margin = (np.empty(n, np.float64), np.empty(n, np.int64), np.empty(n, np.float64),
                                         np.empty(n, np.float64))
        for start in range(0, n, HEAD_ROWS):
            rows = slice(start, min(n, start + HEAD_ROWS))
            logits = hidden[rows] @ weight.T  # float32, as the model's own head
            if cap:
                logits = torch.tanh(logits / cap) * cap
            block = torch.log_softmax(logits.double(), dim=-1)
            logp[rows] = block.gather(1, targets[rows, None])[:, 0].numpy()
            best = block.topk(2, dim=-1)
            top1[rows] = best.indices[:, 0].numpy()
            top1_logp[rows] = best.values[:, 0].numpy()
            margin[rows] = (best.values[:, 0] - best.values[:, 1]).numpy()
    return {"logp": logp, "top1": top1, "top1_logp": top1_logp, "margin": margin}


def window_label(start: int) -> str:
    return f"{start // 1024}k-{(start + WINDOW) // 1024}k"


@pytest.mark.parametrize("length", [pytest.param(label, marks=[pytest.mark.slow] if label == "32k" else [])
                                    for label in TEXTS])  # 32k: ~80% of the tier's time (CI runs "not slow")
def test_next_token_logprobs_match_transformers(loaded, length, report):
    file, first_char, n_tokens = TEXTS[length]
    ids = text_ids(loaded.tokenizer, file, first_char, n_tokens)
    overrides = {}
    if ids.size - 1 > loaded.hf.config.max_position_embeddings:
        overrides["max_position_embeddings"] = ids.size - 1  # SmolLM2 at 32k: past its 8,192 positions
    t0 = time.perf_counter()
    ref = reference_next_token(loaded.hf, ids)
    t_reference = time.perf_counter() - t0
    model = loaded.jaxeval_model(**overrides)
    positions = np.arange(1, ids.size)
    t0 = time.perf_counter()
    got = model.read(ids, positions, np.stack([ids[1:], ref["top1"]], axis=1))
    t_jaxeval = time.perf_counter() - t0

    diff = np.abs(got.logprobs.astype(np.float64) - np.stack([ref["logp"], ref["top1_logp"]], axis=1)).max(axis=1)
    windows = {window_label(s): float(diff[s:s + WINDOW].max()) for s in range(0, diff.size, WINDOW)}
    window_medians = {window_label(s): float(np.median(diff[s:s + WINDOW])) for s in range(0, diff.size, WINDOW)}
    tol = TOL if length == "8k" else TOL_32K[loaded.name]
    decided = ref["margin"] > MARGIN
    top1_mismatches = int(np.sum(decided & (got.top1 != ref["top1"])))
    mean_nll = float(-ref["logp"].mean())
    in_context = -ref["logp"][:loaded.hf.config.max_position_embeddings]  # SmolLM2 past 8k reads ~6 nats
    mean_nll_in_context = float(in_context.mean())
    worst = np.argsort(-diff)[:5]
    report(kind="logprobs", model=loaded.name, length=length, positions=int(diff.size), tokens_file=file,
           overrides=overrides, max_abs_diff=float(diff.max()), window_max_abs_diff=windows,
           window_median_abs_diff=window_medians, tolerance=tol,
           positions_over_tol=int(np.sum(diff > TOL)), median_abs_diff=float(np.median(diff)),
           top1_mismatches=top1_mismatches, mean_nll=mean_nll, mean_nll_in_context=mean_nll_in_context,
           worst=[{"position": int(p + 1), "abs_diff": float(diff[p]), "ref_logp": float(ref["logp"][p])}
                  for p in worst],
           reference_s=round(t_reference, 1), jaxeval_s=round(t_jaxeval, 1))

    assert mean_nll_in_context < MAX_MEAN_NLL, (f"{loaded.name} reads {file} at {mean_nll_in_context:.2f} nats/token "
                                                f"within its context: not a working model")
    assert top1_mismatches == 0, (f"{loaded.name} {length}: top-1 differs from transformers at {top1_mismatches} "
                                  f"positions where the reference's margin exceeds {MARGIN}")
    if length != "8k":
        assert max(window_medians.values()) <= MEDIAN_TOL_32K, (
            f"{loaded.name} {length}: median |d log p| per window above {MEDIAN_TOL_32K:.0e} (a systematic "
            f"difference, not float32 rounding): " + ", ".join(f"{w} {d:.2e}" for w, d in window_medians.items()))
    assert diff.max() <= tol, (
        f"{loaded.name} {length}: max |d log p| {diff.max():.2e} > {tol:.0e} at {int(np.sum(diff > tol))} of "
        f"{diff.size} positions; per window: " + ", ".join(f"{w} {d:.2e}" for w, d in windows.items())
        + "; worst positions: " + ", ".join(f"{p + 1} ({diff[p]:.2e}, ref log p {ref['logp'][p]:.2f})" for p in worst))


def test_greedy_generation_matches_transformers(loaded, report):
    prompt = text_ids(loaded.tokenizer, *PROMPT)
    model = loaded.jaxeval_model()
    ours = model.generate([prompt.tolist()], max_new_tokens=NEW_TOKENS)[0]
    with torch.inference_mode():
        out = loaded.hf.generate(input_ids=torch.as_tensor(prompt[None]), attention_mask=torch.ones(1, prompt.size,
                                 dtype=torch.long), max_new_tokens=NEW_TOKENS, do_sample=False,
                                 output_scores=True, return_dict_in_generate=True)
    theirs = out.sequences[0, prompt.size:].tolist()
    first_difference = next((i for i, (a, b) in enumerate(zip(ours.tokens, theirs)) if a != b),
                            None if len(ours.tokens) == len(theirs) else min(len(ours.tokens), len(theirs)))
    detail = ""
    if first_difference is not None and first_difference < len(out.scores):
        top2 = torch.log_softmax(out.scores[first_difference][0].double(), -1).topk(2).values
        detail = f" (transformers' top-2 margin there: {float(top2[0] - top2[1]):.2e})"
    report(kind="generation", model=loaded.name, prompt_tokens=int(prompt.size), new_tokens=len(theirs),
           identical=first_difference is None, first_difference=first_difference,
           jaxeval_tokens=list(ours.tokens), transformers_tokens=theirs,
           text=loaded.tokenizer.decode(theirs))

    assert first_difference is None, (f"{loaded.name}: greedy tokens differ from transformers' at new token "
                                      f"{first_difference}{detail}: jaxeval {ours.tokens} vs {theirs}")
