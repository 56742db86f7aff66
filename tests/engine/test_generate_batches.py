"""Generation batches: one length bucket per batch, greedy output of one prompt at a time, one
compile per (bucket, rows)."""

from __future__ import annotations

from jaxeval.engine.buckets import generation_batches, generation_bucket
from jaxeval.engine import kv_cache
from jaxeval.engine.generate import generate
from jaxeval.engine.kv_cache import decode_step, prefill_rows
from tests.engine.test_generate import CHUNK, SMALL, prompts_of, runtime_of, tiny

LENGTHS = (3, 300, 90, 17, 600, 257, 64, 250)  # rungs 256, 512, 1,024


def test_batches_hold_one_bucket_longest_first():
    batches = generation_batches(LENGTHS, 16, 3)
    assert sorted(i for b in batches for i in b) == list(range(len(LENGTHS)))
    assert all(len(b) <= 3 and len({generation_bucket(LENGTHS[i], 16) for i in b}) == 1 for b in batches)
    assert [[LENGTHS[i] for i in b] for b in batches] == [[600], [300, 257], [250], [90, 64, 17], [3]]  # 250 + 15: cache 512


def test_batched_greedy_equals_one_prompt_at_a_time_with_per_row_stops():
    config, params = tiny()  # llama: the quickest to compile
    prompts = prompts_of((3, 300, 90, 17, 257), config.vocab_size, seed=5)  # batches of 3 rows (4) and 2
    # a stop id that ends some rows early and not others: every row keeps its own stop rule
    runtime = runtime_of(params, prefill_chunk=CHUNK)
    stop = generate(params, config, runtime, prompts[:1], 10, batch_size=1)[0].tokens[3]
    alone = [generate(params, config, runtime, [p], 10, batch_size=1, stop_token_ids=[stop])[0] for p in prompts]
    batched = generate(params, config, runtime, prompts, 10, batch_size=8, stop_token_ids=[stop])
    assert [g.tokens for g in batched] == [g.tokens for g in alone]
    assert [g.finish_reason for g in batched] == [g.finish_reason for g in alone]
    assert len({len(g.tokens) for g in alone}) > 1  # rows really stop at different steps


def test_one_compile_for_many_prompts_of_one_bucket(monkeypatch):
    config, params = tiny(**SMALL, seed=1)
    runtime = runtime_of(params, prefill_chunk=CHUNK)
    entry_points = (prefill_rows, decode_step)
    rows_per_chunk = []  # the rows of each prefill call: 8 rows together, never one at a time

    def counted(params, cache, chunk_ids, *args, **kwargs):
        rows_per_chunk.append(chunk_ids.shape[0])
        return prefill_rows(params, cache, chunk_ids, *args, **kwargs)

    monkeypatch.setattr(kv_cache, "prefill_rows", counted)
    first = prompts_of((40, 41, 42, 43, 44, 45, 46, 47), config.vocab_size, seed=6)
    before = [f._cache_size() for f in entry_points]
    generate(params, config, runtime, first, 8, batch_size=8)
    after_first = [f._cache_size() for f in entry_points]
    new = [a - b for a, b in zip(after_first, before)]
    assert new[0] <= 1 and new[1] <= 1 and set(rows_per_chunk) == {8}  # 8 rows together
    assert prefill_rows._cache_size() >= 1
    generate(params, config, runtime, prompts_of((100, 3, 70, 200, 9, 150, 33, 12), config.vocab_size, seed=7), 8,
             batch_size=8)  # other lengths, the same rung and rows: nothing new
    assert [f._cache_size() for f in entry_points] == after_first
