"""The embedded tiny model (jaxeval/assets/tiny_llama) and its training script."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / "jaxeval" / "assets" / "tiny_llama"
sys.path.insert(0, str(REPO / "scripts"))

import train_tiny_model as tt  # noqa: E402
from planted_facts import make_facts  # noqa: E402

WIKI = ("Homarus gammarus , known as the European lobster or common lobster , is a species of lobster from "
        "the eastern Atlantic Ocean . It is closely related to the American lobster . It may grow to a length "
        "of 60 cm and a mass of 6 kilograms , and bears a conspicuous pair of claws . In life , the lobsters are "
        "blue , only becoming lobster red on cooking . Mating occurs in the summer , producing eggs which are "
        "carried by the females for up to a year before hatching into planktonic larvae . ")


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(MODEL_DIR))
    tok.model_max_length = 1 << 30
    return tok


@pytest.fixture(scope="module")
def model():
    import jaxeval

    return jaxeval.load_model(MODEL_DIR, dtype="float32")


def test_shipped_files_and_size():
    for name in ("config.json", "jaxeval.json", "tokenizer.json", "tokenizer_config.json", "params"):
        assert (MODEL_DIR / name).exists(), name
    size = sum(f.stat().st_size for f in MODEL_DIR.rglob("*") if f.is_file())
    assert size < 20 * 1024 * 1024, f"{size / 2**20:.1f} MiB"
    config = json.loads((MODEL_DIR / "config.json").read_text())
    assert config["model_type"] == "llama" and config["architectures"] == ["LlamaForCausalLM"]
    assert config == tt.HF_CONFIG, "config.json is not what scripts/train_tiny_model.py writes"


def test_shipped_model_loads(model, tokenizer):
    c = model.config
    assert c.vocab_size == len(tokenizer) == 4096
    assert c.max_position_embeddings >= 32768 and model.max_length >= 32769
    assert c.eos_token_ids == (tokenizer.eos_token_id,) == (0,)
    n_params = sum(int(np.prod(x.shape)) for x in __import__("jax").tree.leaves(model.module.params()))
    assert 2_000_000 < n_params < 6_000_000
    assert model.tokenizer is not None and tokenizer.convert_tokens_to_ids("<|im_end|>") == 2


def test_generator_plants_facts_before_their_queries(tokenizer):
    rng, pyrng = np.random.default_rng(0), random.Random(0)
    filler = tt.FillerText(tokenizer, [[WIKI * 30]])
    facts_tok = tt.FactTokens(tokenizer)
    seq = tt.make_sequence(rng, pyrng, filler, facts_tok, 512, 3, skip_prob=1.0, n_repeats=1)
    facts = make_facts(random.Random(0), 3)  # the same draws as inside make_sequence
    text = tokenizer.decode(seq.ids)
    assert seq.ids.shape == (513,) and seq.kinds.shape == seq.positions.shape == (512,)
    for fact in facts:
        fact_at, query_at = text.index(fact.fact), text.index(fact.query)
        assert fact_at < query_at
        assert text.count(fact.number) == 2
    assert len(seq.answers) == 3
    for answer, fact in zip(seq.answers, sorted(facts, key=lambda f: text.index(f.query))):
        assert tokenizer.decode(seq.ids[answer]) == fact.answer
        # Predicting ids[p] is prediction p - 1: the answer's predictions are ANSWER, the text's TEXT.
        assert (seq.kinds[np.asarray(answer) - 1] == tt.ANSWER).all()
        prefix = tokenizer(" " + fact.query_prefix, add_special_tokens=False)["input_ids"]
        assert seq.ids[answer[0] - len(prefix):answer[0]].tolist() == prefix
    # Each fact's five digits carry no loss; 3 x 7 answer predictions; a copied stretch is marked.
    assert (seq.kinds == tt.FACT_NUMBER).sum() == 15
    assert (seq.kinds == tt.ANSWER).sum() == 21
    assert (seq.kinds == tt.REPEAT).sum() >= tt.REPEAT_LEN[0] - 1
    # At most one position jump, and positions never go back.
    jumps = np.flatnonzero(np.diff(seq.positions) != 1)
    assert len(jumps) <= 1 and (seq.positions[1:] - seq.positions[:-1] >= 1).all()


def test_training_steps_lower_the_loss(tokenizer):
    import jax
    from flax import nnx

    from jaxeval.models.decoder import Decoder

    micro = dict(tt.HF_CONFIG, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=16, max_position_embeddings=1024)
    config = tt.model_config(micro)
    params = Decoder(config, rngs=nnx.Rngs(0)).params()
    filler = tt.FillerText(tokenizer, [[WIKI * 30]])
    phases = [tt.Phase(steps=12, seq_len=128, batch=2, min_facts=1, max_facts=2, skip_prob=0.5, loss_tokens=64,
                       repeats=1)]
    logs = []
    params, history = tt.train(params, config, filler, tt.FactTokens(tokenizer), phases=phases, log_every=4,
                               log=logs.append)
    assert len(history) == 3 and all(np.isfinite(h["loss"]) for h in history)
    assert history[-1]["loss"] < history[0]["loss"] - 0.2, [h["loss"] for h in history]
    assert jax.tree.structure(params) == jax.tree.structure(Decoder(config, rngs=nnx.Rngs(1)).params())


def test_sources_are_the_facts_copies_of_the_answer_tokens(tokenizer):
    rng, pyrng = np.random.default_rng(1), random.Random(1)
    filler = tt.FillerText(tokenizer, [[WIKI * 30]])
    seq = tt.make_sequence(rng, pyrng, filler, tt.FactTokens(tokenizer), 512, 4, skip_prob=1.0, n_repeats=1)
    assert len(seq.sources) == len(seq.answers) == 4
    for answer, source in zip(seq.answers, seq.sources):
        assert len(source) == len(answer) == tt.ANSWER_TOKENS
        assert source == list(range(source[0], source[0] + len(source)))
        assert seq.ids[source].tolist() == seq.ids[answer].tolist()  # " 48213." in the fact and in the query
        assert source[-1] < answer[0]
        assert seq.ids[source[0] - 1] == seq.ids[answer[0] - 1]  # both after the relation's last word
    batch = tt.make_batch(rng, pyrng, filler, tt.FactTokens(tokenizer),
                          tt.Phase(steps=1, seq_len=256, batch=2, min_facts=2, max_facts=3, skip_prob=0.5,
                                   loss_tokens=64, repeats=1))
    ids, _, _, _, sup_at, sup_src, sup_mask = batch
    assert sup_at.shape == sup_src.shape == sup_mask.shape == (2, 3 * tt.ANSWER_TOKENS)
    for b in range(2):
        at, src = sup_at[b][sup_mask[b]], sup_src[b][sup_mask[b]]
        assert len(at) >= 2 * tt.ANSWER_TOKENS and (ids[b][at + 1] == ids[b][src]).all()


def test_training_forward_matches_the_decoder():
    import jax.numpy as jnp

    from jaxeval.models.decoder import embed_tokens, run_layers

    micro = dict(tt.HF_CONFIG, hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=8)
    config = tt.model_config(micro)
    params = tt.init_params(config, 0)
    ids = jnp.asarray(np.random.default_rng(0).integers(0, 4096, 65), jnp.int32)
    positions = jnp.asarray(np.concatenate([np.arange(30), np.arange(30, 64) + 5000]), jnp.int32)
    hidden, head_out, probs = tt.forward_with_attention(params, config, ids, positions)
    reference, _ = run_layers(params, config, embed_tokens(params, config, ids[None, :-1]), positions)
    np.testing.assert_allclose(np.asarray(hidden), np.asarray(reference[0]), atol=1e-5)
    assert head_out.shape == (64, 32) and probs.shape == (64, 64)
    np.testing.assert_allclose(np.asarray(probs.sum(-1)), 1.0, atol=1e-5)
    assert float(np.abs(np.triu(np.asarray(probs), 1)).max()) == 0.0
