"""The rules configs through a jaxeval model: shared-prefix reads give the separate reads' scores."""

from __future__ import annotations

import numpy as np
import pytest
from flax import nnx

from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, run_agent_bench
from jaxeval.engine.backend import LanguageModel
from jaxeval.engine.prefix_reuse import read_many
from jaxeval.engine.runtime import Runtime
from jaxeval.models.config import config_from_hf
from jaxeval.models.decoder import Decoder


class TinyModel(LanguageModel):
    """A one-layer random model over the embedded tokenizer's vocabulary; shared=False: it shares no prefix."""

    def __init__(self, shared: bool):
        raw = dict(model_type="llama", vocab_size=4096, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
                   num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16384, rope_theta=10000.0)
        self.config = config_from_hf(raw)
        self.params = Decoder(self.config, rngs=nnx.Rngs(0)).params()
        self.shared, self.tokenizer = shared, None

    def read_many(self, requests, *, batch_size=1, share_prefixes=True):
        return read_many(self.params, self.config, Runtime(prefill_chunk=1024, dtype="float32"), requests,
                         batch_size=batch_size, share_prefixes=share_prefixes and self.shared)


def test_shared_prefix_reads_score_as_separate_reads(tokenizer):
    kwargs = dict(sets=("rules_en", "rules_de"), lengths=("8k",), limit=2)
    separate = run_agent_bench(TinyModel(shared=False), tokenizer, SHIPPED_DATA, **kwargs)
    shared = run_agent_bench(TinyModel(shared=True), tokenizer, SHIPPED_DATA, **kwargs)
    for config in kwargs["sets"]:
        for name, cell in separate["sets"][config]["8k"]["cells"].items():
            for metric, value in cell.items():
                other = shared["sets"][config]["8k"]["cells"][name][metric]
                assert other == (pytest.approx(value, abs=1e-5) if isinstance(value, float) else value)
    # one text without rules (shared by all four items), four with: the with-rule texts of the
    # system placement share the system prompt only, those of the user placement far more
    assert separate["tokens"]["rules_sequences_read"] == shared["tokens"]["rules_sequences_read"] == 5
    assert shared["tokens"]["rules_tokens_naive"] == 4 * 2 * 8193
    assert shared["tokens"]["rules_tokens_run"] < separate["tokens"]["rules_tokens_run"]
    assert shared["tokens"]["rules_share_of_naive"] <= 0.45
