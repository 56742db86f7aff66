"""Prefix reuse at the 512-token grain: prefixes that end inside a prefill chunk, a preamble common to
several shared prefixes run once, and every read bit-identical to a separate read."""

import numpy as np
import pytest

from jaxeval.engine.prefix_reuse import SHARE_GRAIN, planned_segments, prefix_pieces, run_chunk
from jaxeval.engine.runtime import Runtime
from test_prefix_reuse import read_as_separately
from test_read import tiny

RUNTIME = Runtime(prefill_chunk=1024, dtype="float32")  # buckets of 2,048: chunks of 1,024, grains of 512


def test_stretches_run_on_a_separate_reads_chunk_grid():
    assert SHARE_GRAIN == 512
    # continuations: from 512 or 1,536 in 512-token chunks; to a last input in (5,120, 5,632] too
    assert [run_chunk(begin, 8192, 2048) for begin in (512, 1024, 1536, 2048, 3072, 6144)] == \
        [512, 1024, 512, 2048, 1024, 2048]
    assert [run_chunk(2048, end, 2048) for end in (4096, 5120, 5632, 6144)] == [2048, 1024, 512, 2048]
    # the longest aligned chunk that still ends by the prefix's end: nothing past it is run
    assert prefix_pieces(0, 512, 2048) == [(0, 512, 512)]
    assert prefix_pieces(512, 3584, 2048) == [(512, 1024, 512), (1024, 3072, 1024), (3072, 3584, 512)]
    assert prefix_pieces(0, 4096, 2048) == [(0, 4096, 2048)]
    assert prefix_pieces(1024, 1536, 1024) == [(1024, 1536, 512)]


def _texts(config):
    """Two contexts after one 600-token preamble; each context's texts with a rule inserted at some point."""
    rng = np.random.RandomState(11)
    words = lambda n: rng.randint(0, config.vocab_size, size=n)  # noqa: E731
    preamble = words(600)
    base_a = np.concatenate([preamble, words(1410)])
    base_b = np.concatenate([preamble, words(1310)])
    insert = lambda text, at, n: np.concatenate([text[:at], words(n), text[at:]])  # noqa: E731
    a_early, a_late, b_rule = insert(base_a, 1100, 6), insert(base_a, 1700, 5), insert(base_b, 1100, 7)
    reads = lambda text, *at: (text, np.array(at), text[list(at)])  # noqa: E731
    return [
        reads(base_a, 1800, 1950, 1999),  # shares 1,700 tokens with a_late: 3 grains (1,536)
        reads(a_early, 1600, 2005),  # shares 1,100 with base_a and a_late: 2 grains
        reads(a_late, 1900, 2004),
        reads(base_b, 1200, 1899),
        reads(b_rule, 1300, 1906),  # shares 1,100 with base_b; base_a's and base_b's prefixes part after the preamble
        reads(words(1500), 1400),  # no preamble: read alone
    ]


def test_grain_prefixes_read_bit_identical_to_separate_reads():
    config, params = tiny()
    requests = _texts(config)
    # continuations from 1,536 run 512-token chunks, from 1,024 1,024-token ones; a separate read runs
    # 1,024-token chunks from 0: the same bits
    shared = read_as_separately(params, config, RUNTIME, requests)
    # shared: the preamble's first grain [0, 512) (where a's and b's prefixes part), a's [512, 1024) and
    # [1024, 1536), b's [512, 1024): 4 prefixes of 512 tokens, run once each
    assert shared.prefixes == 4
    continuations = (1999 - 1536) + (2005 - 1024) + (2004 - 1536) + (1899 - 1024) + (1906 - 1024)
    assert shared.tokens_run == 4 * 512 + continuations + 1400
    assert shared.tokens_naive == 1999 + 2005 + 2004 + 1899 + 1906 + 1400
    # `jaxeval plan` counts the same work without running it
    segments = planned_segments(config, requests, RUNTIME.prefill_chunk)
    assert sum(end - first for first, end, _ in segments) == shared.tokens_run
    assert sorted(first for first, _, rows in segments if rows) == [0, 1024, 1024, 1024, 1536, 1536]


def test_hybrid_keeps_the_chunk_grain():
    """A hybrid's Gated DeltaNet states are a separate read's at its chunks' ends only: prefixes end there."""
    from jaxeval.engine.prefix_reuse import share_grain
    from jaxeval.models.config import config_from_hf

    config, _ = tiny()
    hybrid = config_from_hf(dict(model_type="qwen3_5_text", vocab_size=97, hidden_size=32, intermediate_size=48,
                                 num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                                 max_position_embeddings=8192, rope_theta=10000.0,
                                 linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                                 linear_value_head_dim=8, linear_conv_kernel_dim=4,
                                 layer_types=["linear_attention", "full_attention"]))
    assert share_grain(config, 2048) == 512 and share_grain(config, 256) == 256 and share_grain(hybrid, 2048) == 2048
    requests = _texts(config)
    firsts = sorted(first for first, _, rows in planned_segments(hybrid, requests, 1024) if rows)
    assert firsts == [0, 1024, 1024, 1024, 1024, 1024]  # each context's texts share its first chunk, no more


@pytest.mark.long
def test_grain_prefixes_at_16k_positions_read_bit_identical():
    """Continuations from 512 and 9,728 tokens (512-token chunks over a 24,576-slot cache) read positions
    past 16k with exactly a separate read's bits."""
    config, params = tiny(max_position_embeddings=32768)
    rng = np.random.RandomState(17)
    base = rng.randint(0, config.vocab_size, size=17000)
    late = np.concatenate([base[:9900], rng.randint(0, config.vocab_size, size=9), base[9900:]])
    early = np.concatenate([base[:700], rng.randint(0, config.vocab_size, size=4), base[700:]])
    requests = [(text, np.array([16500, 16999]), text[[16500, 16999]]) for text in (base, late, early)]
    shared = read_as_separately(params, config, Runtime(dtype="float32"), requests)
    assert shared.prefixes == 2 and shared.tokens_run == 9728 + (16999 - 9728) * 2 + (16999 - 512)
