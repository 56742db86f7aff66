"""samsum's official stop rule on the real engine (the embedded model through Model.generate).

pred.py generates samsum with eos_token_id=[EOS, id of "\\n"] and min_length = prompt + 1: neither
id can be the first new token, and the first newline after it ends the answer. On the embedded
model's first samsum record greedy decoding starts with a newline, so the rule decides the answer.
One test (model load plus two short generations and a read: ~15 s alone, longer on a loaded
machine) because nothing else exercises the token-level stop and min_new_tokens on the engine.
"""

from __future__ import annotations

import numpy as np

from jaxeval.api import load_model
from jaxeval.benchmarks.longbench import run_longbench
from jaxeval.benchmarks.longbench.data import load_config
from jaxeval.benchmarks.longbench.requests import build_request
from jaxeval.benchmarks.longbench.tasks import SHIPPED_SAMPLE
from jaxeval.cli import EMBEDDED_MODEL


def test_samsum_official_stop_on_the_embedded_model():
    model = load_model(EMBEDDED_MODEL, dtype="float32")
    tokenizer = model.tokenizer
    record = load_config(SHIPPED_SAMPLE, "samsum")[0]
    request = build_request(record, tokenizer, 512, "model", "longbench")
    eos, newline = request.stop_token_ids
    assert request.min_new_tokens == 1 and request.stop is None and newline == tokenizer.encode("\n")[-1]

    free = model.generate([request.prompt_ids], 1)[0]
    assert free.tokens == [newline]  # unruled greedy decoding would answer with an empty line

    ruled = model.generate([request.prompt_ids], request.max_new_tokens, stop_token_ids=request.stop_token_ids,
                           min_new_tokens=1)[0]
    # the first token: the best one that is neither EOS nor newline
    ids = np.array(list(request.prompt_ids) + [0])
    logprobs = model.read(ids, np.array([len(request.prompt_ids)]), np.arange(model.config.vocab_size)[None])
    allowed = np.array(logprobs.logprobs[0], dtype=np.float64)
    allowed[[eos, newline]] = -np.inf
    assert ruled.tokens[0] == int(np.argmax(allowed))
    # then it runs to the first newline, which ends it (kept, as transformers keeps an EOS id)
    assert ruled.finish_reason == "stop" and ruled.tokens[-1] == newline
    assert not {eos, newline} & set(ruled.tokens[:-1]) and len(ruled.tokens) > 1

    result = run_longbench(model, tokenizer, SHIPPED_SAMPLE, datasets=["samsum"], limit=1, max_length=512)
    assert result["outputs"]["samsum"][0]["pred"] == tokenizer.decode(ruled.tokens, skip_special_tokens=True)
    assert result["prompting"]["samsum_stop"].startswith("token ids")
