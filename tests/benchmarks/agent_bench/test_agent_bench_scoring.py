"""Scoring the facts config with fake backends, and the run's output (rows, sets, table)."""

from __future__ import annotations

import pytest

from agent_bench_helpers import (
    OracleBackend, RightOnSomeSequences, WrongBackend, WrongOnToken, facts_record, write_jsonl,
)
from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, format_rows_table, load_split, run_agent_bench
from jaxeval.errors import DataError, InputTooLongError


def test_oracle_recalls_everything(tokenizer):
    result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA)
    assert [row["row"] for row in result["rows"]] == [
        "Facts recalled at 8k tokens", "Facts recalled at 32k tokens"]
    assert [row["value"] for row in result["rows"]] == [1.0, 1.0]
    for split, (items, length) in {"8k": (4, 8193), "32k": (2, 32769)}.items():
        metrics = result["sets"]["facts"][split]
        assert metrics["items"] == items and metrics["queries"] == metrics["scored"] == 8 * items
        assert metrics["unaligned"] == 0
        assert metrics["token_accuracy"] == 1.0
        assert metrics["answer_tokens"] == 7 * 8 * items
        assert metrics["mean_logprob"] == -3.5  # 7 answer tokens at -0.5 each
        assert metrics["tokens_read"] == items * length
    assert result["reference"] is None
    assert result["mode"] == "text" and result["mode_requested"] == "auto"
    assert any("no qwen_* token ids" in note for note in result["mode_notes"])


def test_one_read_per_item_with_every_answer_token(tokenizer):
    backend = OracleBackend()
    run_agent_bench(backend, tokenizer, SHIPPED_DATA, lengths=("8k",))
    assert len(backend.calls) == 4
    for ids, positions, tokens in backend.calls:
        assert len(ids) == 8193 and len(positions) == 8 * 7
        assert (tokens == ids[positions]).all() and positions.min() >= 1


def test_always_wrong_recalls_nothing(tokenizer):
    metrics = run_agent_bench(WrongBackend(), tokenizer, SHIPPED_DATA)["sets"]["facts"]
    for split in ("8k", "32k"):
        assert metrics[split]["query_accuracy"] == 0.0 and metrics[split]["token_accuracy"] == 0.0
        assert metrics[split]["recalled"] == 0


def test_right_on_some_items(tokenizer):
    items = {split: load_split(SHIPPED_DATA, "facts", split) for split in ("8k", "32k")}
    prefix = lambda item: tuple(tokenizer(item.text)["input_ids"][:64])  # noqa: E731
    right_on = {prefix(items["8k"][0]), prefix(items["8k"][3]), prefix(items["32k"][1])}
    result = run_agent_bench(RightOnSomeSequences(right_on), tokenizer, SHIPPED_DATA)
    assert [row["value"] for row in result["rows"]] == [2 / 4, 1 / 2]
    assert result["sets"]["facts"]["8k"]["recalled"] == 16
    assert result["sets"]["facts"]["8k"]["correct_tokens"] == 2 * 8 * 7


def test_wrong_on_the_final_full_stop(tokenizer):
    """Digits right, "." wrong: no query recalled, 6 of 7 answer tokens right."""
    full_stop = tokenizer.convert_tokens_to_ids(".")
    result = run_agent_bench(WrongOnToken(full_stop), tokenizer, SHIPPED_DATA, lengths=("8k",))
    metrics = result["sets"]["facts"]["8k"]
    assert metrics["query_accuracy"] == 0.0
    assert metrics["token_accuracy"] == pytest.approx(6 / 7, abs=0)


def test_unaligned_queries_are_counted_not_scored(tmp_path, tokenizer, bos_tokenizer):
    record = facts_record(facts=(("Fiona booked flight", "48213"), ("Marcus paid invoice", "70112"),
                                 ("Nora won ticket", "33301")))
    # The second target now starts inside " invoice": unaligned for this tokenizer.
    target = record["targets"][1]
    start = target["answer_char"][0] - len("ice")
    target["answer_char"][0], target["answer"] = start, record["text"][start:target["answer_char"][1]]
    write_jsonl(tmp_path, [record])
    for tok in (tokenizer, bos_tokenizer):
        # Wrong only on "4": " 48213." is missed, " 33301." recalled, " 70112." skipped.
        result = run_agent_bench(WrongOnToken(tok.convert_tokens_to_ids("4")), tok, tmp_path, lengths=("8k",))
        metrics = result["sets"]["facts"]["8k"]
        assert (metrics["queries"], metrics["scored"], metrics["unaligned"]) == (3, 2, 1)
        assert metrics["recalled"] == 1 and metrics["query_accuracy"] == 0.5
        assert (metrics["correct_tokens"], metrics["answer_tokens"]) == (13, 14)
    assert metrics["tokens_read"] == len(bos_tokenizer(record["text"])["input_ids"])


def test_bos_tokenizer_scores_the_same(tokenizer, bos_tokenizer):
    plain = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, lengths=("8k",), limit=1)
    with_bos = run_agent_bench(OracleBackend(), bos_tokenizer, SHIPPED_DATA, lengths=("8k",), limit=1)
    assert plain["rows"] == with_bos["rows"]
    assert with_bos["sets"]["facts"]["8k"]["tokens_read"] == 8194


def test_too_long_for_the_model(tokenizer):
    with pytest.raises(InputTooLongError) as error:
        run_agent_bench(OracleBackend(max_length=8192), tokenizer, SHIPPED_DATA, lengths=("8k",))
    message = str(error.value)
    assert "facts/8k" in message and "'facts-8k-000'" in message and "8193" in message and "8192" in message
    # Exactly long enough is fine.
    run_agent_bench(OracleBackend(max_length=8193), tokenizer, SHIPPED_DATA, lengths=("8k",), limit=1)


def test_limit_and_lengths(tokenizer):
    result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, lengths=("32k",), limit=1)
    assert [row["row"] for row in result["rows"]] == ["Facts recalled at 32k tokens"]
    assert list(result["sets"]["facts"]) == ["32k"] and result["sets"]["facts"]["32k"]["items"] == 1


def test_unknown_set_or_length(tokenizer):
    with pytest.raises(DataError, match="unknown set 'fact'; available: facts, tool_calls, rules_en"):
        run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, sets=("fact",))
    with pytest.raises(DataError, match="unknown length '16k'; available: 8k, 32k"):
        run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, lengths=("16k",))


def test_rows_table_is_aligned(tokenizer):
    right_on = {tuple(tokenizer(load_split(SHIPPED_DATA, "facts", "8k")[0].text)["input_ids"][:64])}
    table = format_rows_table(run_agent_bench(RightOnSomeSequences(right_on), tokenizer, SHIPPED_DATA))
    lines = table.splitlines()
    assert lines[0].split() == ["row", "value", "from", "scored"]
    assert "Facts recalled at 8k tokens" in lines[2] and "0.25" in lines[2] and "facts/8k" in lines[2]
    assert "Facts recalled at 32k tokens" in lines[3] and "0.00" in lines[3] and "16 of 16" in lines[3]
    value_end = lines[0].index("value") + len("value")
    assert lines[2][value_end - 4:value_end] == "0.25" and lines[3][value_end - 4:value_end] == "0.00"
