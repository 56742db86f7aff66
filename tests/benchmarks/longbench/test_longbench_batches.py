"""LongBench generation in journal batches: one length bucket per batch, --batch_size reaches the
engine, and a batch cut short leaves none of its samples in the journal."""

from __future__ import annotations

import zlib

import pytest

from jaxeval.benchmarks.longbench import run_longbench
from jaxeval.benchmarks.longbench.tasks import SHIPPED_SAMPLE
from jaxeval.run.journal import Journal
from longbench_helpers import Generation


class PromptHashBackend:
    """Answers each prompt with a word fixed by the prompt; can fail on its n-th call."""

    def __init__(self, tokenizer, fail_on_call: int | None = None):
        self.tokenizer, self.fail_on_call = tokenizer, fail_on_call
        self.calls: list[tuple[int, int]] = []  # (prompts, batch_size) per call

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt("preempted in the middle of a batch")
        self.calls.append((len(prompts), batch_size))
        texts = [f"answer{zlib.crc32(bytes(str(list(p)), 'ascii')) % 1000}" for p in prompts]
        return [Generation(t, list(self.tokenizer.encode(t, add_special_tokens=False))) for t in texts]


def test_an_interrupted_batch_journals_none_of_its_samples(tokenizer, tmp_path):
    kwargs = dict(datasets=["qasper"], batch_size=2, max_length=1500)
    whole = run_longbench(PromptHashBackend(tokenizer), tokenizer, SHIPPED_SAMPLE, **kwargs)
    path, identity = str(tmp_path / "journal.jsonl"), {"run": "longbench batches"}
    with Journal(path, identity, flush_every=1) as journal, pytest.raises(KeyboardInterrupt):
        run_longbench(PromptHashBackend(tokenizer, fail_on_call=1), tokenizer, SHIPPED_SAMPLE, journal=journal,
                      **kwargs)
    with Journal(path, identity) as journal:
        assert len(journal) == 2  # the first batch of two; the second, cut short, left nothing
        backend = PromptHashBackend(tokenizer)
        resumed = run_longbench(backend, tokenizer, SHIPPED_SAMPLE, journal=journal, **kwargs)
    assert backend.calls == [(1, 2)]  # only the unfinished batch ran again, with --batch_size passed on
    assert [o["pred"] for o in resumed["outputs"]["qasper"]] == [o["pred"] for o in whole["outputs"]["qasper"]]
    assert len({o["pred"] for o in whole["outputs"]["qasper"]}) > 1  # predictions really differ per record
