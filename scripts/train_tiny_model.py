"""Train the embedded tiny Llama model (jaxeval/assets/tiny_llama) with JAX and optax, on CPU.

    python scripts/train_tiny_model.py [--out jaxeval/assets/tiny_llama] [--steps_scale 1.0]
                                       [--text_dir ../shared/data/text] [--eval_seeds 1] [--eval_32k]

One command reproduces the shipped model: fixed seeds, fixed phases, then a recall-at-8k
estimate and an Orbax checkpoint (jaxeval.weights.orbax layout) next to the tokenizer.

What it learns from:
- Filler text: Tiny Shakespeare and the WikiText-2 articles that the longctx-agent-bench facts
  sample does NOT use. The sample's articles (rebuilt here with scripts/build_agent_sample.py,
  which is deterministic) are held out of training and serve as the evaluation texts instead.
- Planted facts (scripts/planted_facts.py) spliced into the filler at sentence starts: several
  facts early in each sequence, their queries later in shuffled order, so answering a query
  ("... Fiona booked flight" -> " 48213.") means copying a random number from far back. The
  numbers are random, so nothing can be memorised; the answer tokens are weighted up and the
  planted numbers themselves (unpredictable) carry no loss.

How the recall is learned in a CPU budget (a few thousand steps):
- Two auxiliary losses train one head of the last layer as a retrieval head: its attention
  from the token before each answer token goes to that token's copy in the fact, and its
  output alone, read through the LM head, predicts the token (a copy). The language-model loss
  alone leaves 2-4 layer models at chance on the digits (scripts/README.md).
- Untied, large initial input embeddings keep the ten digits apart (they otherwise collapse
  onto one direction under the text loss before any copying forms).

How it reaches 8k (and 32k) tokens while training on short sequences:
- rope_theta = 1e6: the slow rotary dimensions barely turn over 32k tokens, so content
  matching does not depend on the distance.
- Skip-wise positions (PoSE): in half the sequences the positions jump by a random offset
  between the facts part and the queries part, so the model sees fact-to-query distances of
  up to ~8k while attending over at most 1,024 keys.
- A last phase at 1,024 tokens with more facts and filler between facts and queries.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted_facts import PlantedFact, make_facts  # noqa: E402

from jaxeval.models.config import ModelConfig, config_from_hf  # noqa: E402
from jaxeval.models.decoder import (Decoder, attention_inputs, embed_tokens, final_logits,  # noqa: E402
                                    layer_output)
from jaxeval.models.rope import rope_tables  # noqa: E402

DEFAULT_OUT = REPO / "jaxeval/assets/tiny_llama"
DEFAULT_TEXT_DIR = REPO.parent / "shared" / "data" / "text"  # ../shared of the checkout
SEED = 20250601

# The shipped architecture: a 2-layer Llama with untied embeddings, ~3.4M parameters.
HF_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "vocab_size": 4096,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "head_dim": 64,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rope_scaling": None,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "mlp_bias": False,
    "initializer_range": 0.02,
    "bos_token_id": None,
    "eos_token_id": 0,  # <|endoftext|>; the tokenizer has no BOS
    "pad_token_id": 0,
    "torch_dtype": "float32",
    "use_cache": True,
}


@dataclasses.dataclass(frozen=True)
class Phase:
    steps: int
    seq_len: int  # training tokens per sequence (inputs; one more token is read for the targets)
    batch: int
    min_facts: int  # facts per sequence: uniform in [min_facts, max_facts]
    max_facts: int
    skip_prob: float  # chance of a PoSE position jump between the facts part and the queries part
    loss_tokens: int  # predictions scored per sequence: every answer token, the rest drawn from the text
    repeats: int = 0  # copied stretches of filler per sequence


PHASES = (
    # Text with planted facts (and a copied stretch); in half the sequences the positions jump
    # by up to ~8k between the facts part and the queries part (PoSE).
    Phase(steps=1000, seq_len=256, batch=8, min_facts=4, max_facts=8, skip_prob=0.5, loss_tokens=128, repeats=1),
    # Longer sequences: more distractors for the retrieval head to ignore.
    Phase(steps=120, seq_len=1024, batch=2, min_facts=6, max_facts=8, skip_prob=0.5, loss_tokens=256, repeats=1),
)
PEAK_LR, WARMUP, FINAL_LR_FRACTION = 3e-3, 30, 0.1
WEIGHT_DECAY, CLIP = 0.0, 1.0
# Loss weight per kind of token: text, planted number (random: none), answer (" ", five digits,
# "." after a query), copied stretch.
KIND_WEIGHTS = (1.0, 0.0, 5.0, 2.0)
# The recall circuit is trained with two auxiliary losses on one head (RETRIEVAL_HEAD of the last
# layer), next to the language-model loss: its attention from the token before each answer token
# to that token's copy in the fact (cross-entropy of the attention), and its output alone, read
# through the LM head, predicting the answer token (the copy). Without them a 2-4 layer model
# stays at chance on the digits for 500+ steps (see scripts/README.md).
ATTENTION_LOSS_WEIGHT, COPY_LOSS_WEIGHT = 1.0, 1.0
RETRIEVAL_HEAD = 0
ANSWER_TOKENS = 7  # " ", five digits, "."
# Input embeddings start large (untied from the LM head): with the usual 0.02 the ten digits'
# embeddings collapse onto one "digit" direction under the text loss (cosine ~0.9) before any
# copying forms, and the copy then stays at chance.
EMBED_INIT_STD = 0.5
REPEAT_LEN = (8, 32)  # tokens per copied stretch
EVAL_LEN = 8193  # tokens of a benchmark facts item at 8k
POSE_MAX_POSITION = 8192


# ----------------------------------------------------------------------------- text and facts

def benchmark_items(tokenizer, text_dir: Path, seed: int | None = None) -> dict[str, list[dict]]:
    """The facts sample items as scripts/build_agent_sample.py builds them (seed None: its own seed).

    With another seed: the same WikiText articles with other facts and other insertion points.
    """
    import build_agent_sample as builder

    rng = random.Random(builder.SEED if seed is None else seed)
    items = {}
    for split, (n_tokens, n_items, file_name, wikitext_split) in builder.SPLITS.items():
        articles = builder.read_articles(text_dir / file_name)
        items[split] = builder.build_split(tokenizer, rng, articles, n_tokens, n_items, split, wikitext_split)
    return items


def held_out_titles(items: dict[str, list[dict]]) -> set[str]:
    return {title for split_items in items.values() for item in split_items for title in item["source"]["articles"]}


def read_article_texts(path: Path) -> list[tuple[str, str]]:
    import build_agent_sample as builder

    return [(a.title, a.text) for a in builder.read_articles(path)]


SENTENCE_ENDS = ("Ġ.", ".", "Ċ", "?", "!", "Ġ?", "Ġ!")


def load_filler(tokenizer, text_dir: Path, exclude_titles: set[str]) -> tuple[FillerText, int]:
    """Tiny Shakespeare and the WikiText-2 articles whose titles are not excluded; (filler, articles excluded)."""
    texts, excluded = [], 0
    for name in ("wikitext2_valid.txt", "wikitext2_test.txt"):
        kept = []
        for title, text in read_article_texts(text_dir / name):
            if title in exclude_titles:
                excluded += 1
            else:
                kept.append(text)
        texts.append(kept)
    texts.append([(text_dir / "tinyshakespeare.txt").read_text("utf-8")])
    return FillerText(tokenizer, texts), excluded


class FillerText:
    """Training filler: token streams with the positions where a sentence may be spliced in."""

    def __init__(self, tokenizer, texts: list[list[str]]):
        """texts: per stream, its pieces (articles), tokenized separately and joined."""
        self.streams: list[np.ndarray] = []
        self.starts: list[np.ndarray] = []  # sorted token indices where a new sentence may start
        self.spaced: list[np.ndarray] = []  # sorted token indices of space-led tokens (fallback)
        vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        ends = np.array([tok in SENTENCE_ENDS for tok in vocab])
        spaced = np.array([tok.startswith("Ġ") and len(tok) > 1 for tok in vocab])
        for pieces in texts:
            ids = np.concatenate([np.asarray(x, np.int32) for x in tokenizer(pieces)["input_ids"]])
            ok = np.zeros(len(ids), bool)
            # A planted sentence goes before a space-led token, so its own first token is " Name"
            # just as in the query; preferably right after a sentence end.
            ok[1:] = spaced[ids[1:]]
            self.streams.append(ids)
            self.starts.append(np.flatnonzero(ok & np.concatenate([[False], ends[ids[:-1]]])))
            self.spaced.append(np.flatnonzero(ok))
        self.sizes = np.array([len(s) for s in self.streams], np.float64)

    @property
    def n_tokens(self) -> int:
        return int(self.sizes.sum())

    def window(self, rng: np.random.Generator, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A random stretch of `length` tokens, its sentence starts and its space-led tokens (relative)."""
        k = rng.choice(len(self.streams), p=self.sizes / self.sizes.sum())
        ids = self.streams[k]
        a = int(rng.integers(0, len(ids) - length))

        def inside(points):
            lo, hi = np.searchsorted(points, [a, a + length])
            return points[lo:hi] - a

        return ids[a:a + length], inside(self.starts[k]), inside(self.spaced[k])


class FactTokens:
    """Token ids of facts and queries as they appear mid-text (after a sentence end, before a space)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def fact(self, f: PlantedFact) -> tuple[list[int], int]:
        """(tokens of " <fact>", index of its first answer token: the " " before the number)."""
        prefix = self.encode(" " + f.fact[: -len(f.answer)])  # " Fiona booked flight"
        return prefix + self.encode(f.answer), len(prefix)

    def query(self, f: PlantedFact) -> tuple[list[int], int]:
        """(tokens of " <query prefix><answer>", index of the first answer token)."""
        prefix = self.encode(" " + f.query_prefix)
        return prefix + self.encode(f.answer), len(prefix)


TEXT, FACT_NUMBER, ANSWER, REPEAT = 0, 1, 2, 3  # what a token is (the kind of its prediction)


@dataclasses.dataclass
class Sequence:
    ids: np.ndarray  # int32 [T + 1]
    kinds: np.ndarray  # int8 [T]: kind of the token ids[t + 1] predicted at t (TEXT, FACT_NUMBER, ...)
    positions: np.ndarray  # int32 [T]: rotary positions of ids[:T]
    answers: list[list[int]]  # per query, the indices p of its answer tokens in ids (predicted from ids[:p])
    sources: list[list[int]] = dataclasses.field(default_factory=list)  # per query, its fact's copies of them


def make_sequence(rng: np.random.Generator, pyrng: random.Random, filler: FillerText, facts_tok: FactTokens,
                  seq_len: int, n_facts: int, skip_prob: float = 0.0, n_repeats: int = 0,
                  max_position: int = POSE_MAX_POSITION) -> Sequence:
    """Filler text with n_facts facts in its first part and their queries (shuffled) after them.

    n_repeats: also copy that many short stretches of the filler to later places (plain
    copying, which teaches the induction heads that the recall of an answer needs).
    skip_prob: chance that the positions jump by a random offset just before the first query.
    """
    facts = make_facts(pyrng, n_facts)
    fact_parts = [facts_tok.fact(f) for f in facts]
    query_parts = [facts_tok.query(f) for f in facts]
    repeat_lens = [int(rng.integers(REPEAT_LEN[0], REPEAT_LEN[1] + 1)) for _ in range(n_repeats)]
    planted = sum(len(t) for t, _ in fact_parts) + sum(len(t) for t, _ in query_parts)
    while repeat_lens and seq_len + 1 - planted - sum(repeat_lens) < 2 * max(repeat_lens):
        repeat_lens.pop()  # no room: fewer copies
    n_filler = seq_len + 1 - planted - sum(repeat_lens)
    if n_filler < 2 * n_facts:
        raise ValueError(f"{n_facts} facts do not fit in {seq_len} tokens")
    text, starts, spaced = filler.window(rng, n_filler)
    # The facts go before `split`, the queries after it; split anywhere in the middle 60%.
    split = min(max(int(n_filler * rng.uniform(0.2, 0.8)), n_facts), n_filler - n_facts)

    def points(lo, hi, count):
        for pool in (starts, spaced, np.arange(n_filler)):
            cand = pool[(pool >= lo) & (pool < hi)]
            if len(cand) >= count:
                break
        return np.sort(rng.choice(cand, size=count, replace=False))

    fact_points = points(0, split, n_facts)
    query_points = points(split, n_filler, n_facts)
    order = rng.permutation(n_facts)
    # (point in the filler, order at equal points, tokens, kinds)
    inserts = []
    for k, p in enumerate(fact_points):
        tokens, first = fact_parts[k]
        # The number's digits are random: no loss on them (its " " and "." are predictable).
        kinds = [TEXT] * (first + 1) + [FACT_NUMBER] * (len(tokens) - first - 2) + [TEXT]
        inserts.append((int(p), 0, tokens, kinds, k))
    for j, p in enumerate(query_points):
        tokens, first = query_parts[int(order[j])]
        inserts.append((int(p), 1, tokens, [TEXT] * first + [ANSWER] * (len(tokens) - first), int(order[j])))
    busy = np.concatenate([fact_points, query_points])
    for length in repeat_lens:
        q = int(rng.integers(length + 1, n_filler + 1))
        for _ in range(8):  # a source stretch that no planted sentence splits
            src = int(rng.integers(0, q - length + 1))
            if not ((busy > src) & (busy < src + length)).any():
                break
        inserts.append((q, 2, text[src:src + length].tolist(), [TEXT] + [REPEAT] * (length - 1), -1))
    ids, kinds, answers, sources = [], [], [], []
    last, split_at, fact_answer_at = 0, None, {}
    for point, order_key, tokens, token_kinds, fact_index in sorted(inserts, key=lambda x: (x[0], x[1])):
        ids.extend(text[last:point].tolist())
        kinds.extend([TEXT] * (point - last))
        last = point
        if order_key == 0:  # where the fact's answer tokens (" 48213.") stand
            fact_answer_at[fact_index] = len(ids) + fact_parts[fact_index][1]
        if order_key == 1:
            split_at = len(ids) if split_at is None else split_at
            answers.append([len(ids) + i for i, kind in enumerate(token_kinds) if kind == ANSWER])
            sources.append([fact_answer_at[fact_index] + i for i in range(len(answers[-1]))])
        ids.extend(tokens)
        kinds.extend(token_kinds)
    ids.extend(text[last:].tolist())
    kinds.extend([TEXT] * (len(text) - last))
    assert len(ids) == seq_len + 1, (len(ids), seq_len)
    positions = np.arange(seq_len, dtype=np.int32)
    if rng.random() < skip_prob and max_position > seq_len:
        positions[split_at:] += int(rng.integers(0, max_position - seq_len + 1))
    return Sequence(np.asarray(ids, np.int32), np.asarray(kinds[1:], np.int8), positions, answers, sources)


# ----------------------------------------------------------------------------- model and training

def model_config(hf_config: dict = HF_CONFIG) -> ModelConfig:
    return config_from_hf(hf_config)


def forward_with_attention(params, config: ModelConfig, ids, positions):
    """ids int [T + 1] -> (hidden [T, D] before the final norm, output [T, D] of the retrieval head
    alone, its attention [T, T]).

    The decoder's layers with the attention written out (softmax over the causal scores), so
    the retrieval head's probabilities can be trained; the same function as run_layers with the
    xla backend (see test_tiny_model.py).
    """
    x = embed_tokens(params, config, ids[None, :-1])
    length = x.shape[1]
    rope = rope_tables(config, length)
    causal = jnp.tril(jnp.ones((length, length), bool))
    group = config.num_heads // config.num_kv_heads
    for layer in range(config.num_layers):
        lp = jax.tree.map(lambda w: w[layer], params["layers"])
        q, k, v = attention_inputs(lp, config, x, positions, (rope.inv_freq[layer], rope.scale[layer]))
        k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) * config.attention_scale
        probs = jax.nn.softmax(jnp.where(causal, scores, -1e30), axis=-1)
        x = layer_output(lp, config, x, jnp.einsum("bhqk,bkhd->bqhd", probs, v))
    head = RETRIEVAL_HEAD
    head_out = jnp.einsum("qk,kd,dD->qD", probs[0, head], v[0, :, head], lp["wo"][head])
    return x[0], head_out, probs[0, head]


def loss_and_metrics(params, config: ModelConfig, ids, positions, select, kinds, sup_at, sup_src, sup_mask):
    """ids int [B, T+1]; positions int [B, T] (rotary positions per sequence);
    select int [B, N]: the predictions scored (index t predicts ids[t + 1]); kinds int [B, N]
    (-1: padding, no loss). The LM head runs on the selected rows only: on CPU it is a large
    part of the work. sup_at, sup_src int [B, M], sup_mask bool [B, M]: the retrieval head's
    targets, prediction sup_at (of an answer token) reading the answer token's copy at sup_src.
    """

    def one(seq_ids, seq_positions, seq_select, seq_at, seq_src):
        hidden, head_out, probs = forward_with_attention(params, config, seq_ids, seq_positions)
        return hidden[seq_select], head_out[seq_at], jnp.log(probs[seq_at, seq_src] + 1e-9)

    hidden, head_out, log_attention = jax.vmap(one)(ids, positions, select, sup_at, sup_src)
    logits = final_logits(params, config, hidden)  # [B, N, V]
    targets = jnp.take_along_axis(ids, select + 1, axis=1)
    nll = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
    weights = jnp.asarray(KIND_WEIGHTS)[jnp.maximum(kinds, 0)] * (kinds >= 0)
    lm_loss = (nll * weights).sum() / weights.sum()
    mask = sup_mask.astype(jnp.float32)
    n_sup = jnp.maximum(mask.sum(), 1.0)
    attention_loss = -(log_attention * mask).sum() / n_sup
    copy_nll = optax.softmax_cross_entropy_with_integer_labels(
        final_logits(params, config, head_out), jnp.take_along_axis(ids, sup_at + 1, axis=1))
    copy_loss = (copy_nll * mask).sum() / n_sup
    loss = lm_loss + ATTENTION_LOSS_WEIGHT * attention_loss + COPY_LOSS_WEIGHT * copy_loss
    correct = jnp.argmax(logits, -1) == targets
    metrics = {"loss": loss, "attention_loss": attention_loss, "copy_loss": copy_loss}
    for name, kind, what in (("text", TEXT, "nll"), ("answer", ANSWER, "nll"), ("answer", ANSWER, "acc"),
                             ("repeat", REPEAT, "acc")):
        kind_mask = kinds == kind
        value = nll if what == "nll" else correct
        metrics[f"{name}_{what}"] = (value * kind_mask).sum() / jnp.maximum(kind_mask.sum(), 1)
    return loss, metrics


def make_optimizer(total_steps: int, peak_lr: float = PEAK_LR, warmup: int = WARMUP):
    schedule = optax.warmup_cosine_decay_schedule(0.0, peak_lr, min(warmup, total_steps // 2 + 1), max(total_steps, 2),
                                                  end_value=peak_lr * FINAL_LR_FRACTION)
    decay_mask = lambda params: jax.tree.map(lambda p: p.ndim >= 2, params)  # noqa: E731  no decay on norms
    return optax.chain(optax.clip_by_global_norm(CLIP),
                       optax.adamw(schedule, b1=0.9, b2=0.95, weight_decay=WEIGHT_DECAY, mask=decay_mask))


def make_train_step(config: ModelConfig, optimizer):
    @jax.jit
    def step(params, opt_state, *batch):
        grads, metrics = jax.grad(lambda p: loss_and_metrics(p, config, *batch), has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, metrics

    return step


def select_predictions(rng: np.random.Generator, kinds: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """`count` predictions of one sequence: every answer and repeat token, the rest drawn from the text.

    Returns their indices and kinds (-1 marks padding)."""
    must = np.flatnonzero((kinds == ANSWER) | (kinds == REPEAT))[:count]
    text = np.flatnonzero(kinds == TEXT)
    extra = rng.choice(text, size=min(max(count - len(must), 0), len(text)), replace=False)
    chosen = np.sort(np.concatenate([must, extra])).astype(np.int32)
    chosen_kinds = kinds[chosen].astype(np.int32)
    pad = count - len(chosen)
    return np.pad(chosen, (0, pad)), np.pad(chosen_kinds, (0, pad), constant_values=-1)


def make_batch(rng, pyrng, filler, facts_tok, phase: Phase):
    """(ids, positions, select, kinds, sup_at, sup_src, sup_mask) of a batch, numpy arrays."""
    n_sup = phase.max_facts * ANSWER_TOKENS
    rows = []
    for _ in range(phase.batch):
        n_facts = int(rng.integers(phase.min_facts, phase.max_facts + 1))
        while True:
            try:
                seq = make_sequence(rng, pyrng, filler, facts_tok, phase.seq_len, n_facts,
                                    skip_prob=phase.skip_prob, n_repeats=phase.repeats)
                break
            except ValueError:  # long names and questions: fewer facts fit
                n_facts -= 1
        chosen, chosen_kinds = select_predictions(rng, seq.kinds, phase.loss_tokens)
        at = np.asarray([p - 1 for answer in seq.answers for p in answer], np.int32)[:n_sup]
        src = np.asarray([p for source in seq.sources for p in source], np.int32)[:n_sup]
        pad = n_sup - len(at)
        rows.append((seq.ids, seq.positions, chosen, chosen_kinds, np.pad(at, (0, pad)), np.pad(src, (0, pad)),
                     np.arange(n_sup) < len(at)))
    return tuple(np.stack(x) for x in zip(*rows))


def train(params, config: ModelConfig, filler, facts_tok, phases=PHASES, seed: int = SEED, log_every: int = 20,
          steps_scale: float = 1.0, log=print, peak_lr: float = PEAK_LR, warmup: int = WARMUP,
          snapshot=None, resume=None):
    """Run the phases with one AdamW schedule over all steps.

    snapshot(phase_index, state): called after each phase with a picklable state;
    resume: such a state, to continue after its phase (development runs).
    """
    phases = [dataclasses.replace(p, steps=max(1, round(p.steps * steps_scale))) for p in phases]
    total = sum(p.steps for p in phases)
    optimizer = make_optimizer(total, peak_lr, warmup)
    opt_state = optimizer.init(params)
    step_fn = make_train_step(config, optimizer)
    rng = np.random.default_rng(seed)
    pyrng = random.Random(seed)
    done, history, first_phase = 0, [], 0
    if resume is not None:
        params, opt_state, rng, pyrng, done, first_phase = (resume[k] for k in (
            "params", "opt_state", "rng", "pyrng", "done", "next_phase"))
        params, opt_state = jax.tree.map(jnp.asarray, (params, opt_state))
    t0 = time.time()
    for index, phase in enumerate(phases):
        if index < first_phase:
            continue
        log(f"phase: {phase}")
        acc = []
        for i in range(phase.steps):
            batch = make_batch(rng, pyrng, filler, facts_tok, phase)
            params, opt_state, metrics = step_fn(params, opt_state, *map(jnp.asarray, batch))
            acc.append(metrics)
            done += 1
            if (i + 1) % log_every == 0 or i + 1 == phase.steps:
                m = {k: float(np.mean([float(a[k]) for a in acc])) for k in acc[0]}
                acc = []
                history.append(m)
                log(f"step {done:5d}/{total}  " + "  ".join(f"{k} {v:.3f}" for k, v in m.items())
                    + f"  {time.time() - t0:7.1f}s")
        if snapshot is not None:
            snapshot(index, {"params": jax.tree.map(np.asarray, params), "opt_state": jax.tree.map(np.asarray, opt_state),
                             "rng": rng, "pyrng": pyrng, "done": done, "next_phase": index + 1})
    return params, history


# ----------------------------------------------------------------------------- evaluation

def item_queries(tokenizer, item: dict) -> tuple[np.ndarray, list[tuple[int, list[int]]]]:
    """Token ids of a facts item and, per target, (index of its first answer token, answer token ids)."""
    enc = tokenizer(item["text"], return_offsets_mapping=True, add_special_tokens=False)
    ids = np.asarray(enc["input_ids"], np.int32)
    starts = [a for a, _ in enc["offset_mapping"]]
    queries = []
    for target in item["targets"]:
        first = starts.index(target["answer_char"][0])
        answer = tokenizer(target["answer"], add_special_tokens=False)["input_ids"]
        assert ids[first:first + len(answer)].tolist() == answer, "answer tokens differ in context"
        queries.append((first, answer))
    return ids, queries


def recall(params, config: ModelConfig, ids: np.ndarray, queries: list[tuple[int, list[int]]]) -> list[bool]:
    """Per query: is every answer token the top-1 prediction (teacher-forced)?"""
    from jaxeval.engine.read import read
    from jaxeval.engine.runtime import Runtime

    positions = [p for first, answer in queries for p in range(first, first + len(answer))]
    tokens = [t for _, answer in queries for t in answer]
    top1 = read(params, config, Runtime(attention="chunked", dtype="float32"), ids, np.asarray(positions),
                np.asarray(tokens)).top1
    out, k = [], 0
    for _, answer in queries:
        out.append(bool((top1[k:k + len(answer)] == np.asarray(answer)).all()))
        k += len(answer)
    return out


def evaluate(params, config, tokenizer, items: list[dict], log=print, label="8k") -> float:
    hits = []
    t0 = time.time()
    for item in items:
        ids, queries = item_queries(tokenizer, item)
        hits.extend(recall(params, config, ids, queries))
    rate = float(np.mean(hits)) if hits else float("nan")
    log(f"recall@{label}: {sum(hits)}/{len(hits)} = {rate:.3f}  ({len(items)} items, {time.time() - t0:.0f}s)")
    return rate


# ----------------------------------------------------------------------------- main

def init_params(config: ModelConfig, seed: int = SEED) -> dict:
    """Random weights: the decoder's initialisation with the input embeddings scaled to EMBED_INIT_STD."""
    params = Decoder(config, rngs=nnx.Rngs(seed)).params()
    if not config.tie_word_embeddings:
        params["embed"] = params["embed"] * (EMBED_INIT_STD / 0.02)
    return params


def parameter_count(params) -> int:
    return int(sum(x.size for x in jax.tree.leaves(params)))


def main(argv=None) -> None:
    from transformers import AutoTokenizer

    from jaxeval.weights.orbax import save_checkpoint

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="model folder (the tokenizer is read from "
                        "--tokenizer; config.json, jaxeval.json and params/ are written here)")
    parser.add_argument("--tokenizer", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--text_dir", type=Path, default=DEFAULT_TEXT_DIR)
    parser.add_argument("--steps_scale", type=float, default=1.0, help="multiply every phase's steps (quick runs)")
    parser.add_argument("--eval_seeds", type=int, default=1,
                        help="extra 8k eval sets: the sample's articles with other facts (4 items each)")
    parser.add_argument("--eval_32k", action="store_true", help="also measure recall on the 32k sample items (slow)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="stored weight dtype")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)

    t_start = time.time()
    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    tokenizer.model_max_length = 1 << 30  # whole corpora are tokenized at once
    assert len(tokenizer) == HF_CONFIG["vocab_size"], f"tokenizer has {len(tokenizer)} ids"
    assert tokenizer.eos_token_id == HF_CONFIG["eos_token_id"]
    sample = benchmark_items(tokenizer, args.text_dir)
    filler, excluded = load_filler(tokenizer, args.text_dir, held_out_titles(sample))
    facts_tok = FactTokens(tokenizer)
    print(f"filler: {filler.n_tokens} tokens ({excluded} WikiText articles held out for the facts sample); "
          f"{time.time() - t_start:.0f}s")

    config = model_config()
    params = init_params(config, args.seed)
    print(f"model: {parameter_count(params):,} parameters")
    t_train = time.time()
    params, _ = train(params, config, filler, facts_tok, seed=args.seed, steps_scale=args.steps_scale)
    train_s = time.time() - t_train
    print(f"training: {train_s / 60:.1f} min")

    dtype = jnp.float32 if args.dtype == "float32" else jnp.bfloat16
    params = jax.tree.map(lambda a: np.asarray(a.astype(dtype)), params)
    save_checkpoint(args.out, params, HF_CONFIG, dtype=args.dtype)
    print(f"saved {args.out}")

    eval_params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    evaluate(eval_params, config, tokenizer, sample["8k"], label="8k (the facts sample items)")
    extra = [item for s in range(args.eval_seeds) for item in benchmark_items(tokenizer, args.text_dir, 1000 + s)["8k"]]
    if extra:
        evaluate(eval_params, config, tokenizer, extra, label="8k (same articles, other facts)")
    if args.eval_32k:
        evaluate(eval_params, config, tokenizer, sample["32k"], label="32k (the facts sample items)")
    print(f"total: {(time.time() - t_start) / 60:.1f} min")


if __name__ == "__main__":
    main()
