"""Character spans to token positions: text mode, BOS-adding tokenizers, stored ids (auto mode)."""

from __future__ import annotations

import dataclasses

from agent_bench_helpers import facts_record
from jaxeval.benchmarks.agent_bench import (
    align_stored_ids, align_text, items_from_records, stored_ids_problem,
)
from jaxeval.benchmarks.agent_bench.facts import align_item

TEXT = "Fiona booked flight 48213. Then café 90210. Which flight did Fiona book? Fiona booked flight 48213."


def _span(text: str, piece: str, occurrence: int = -1) -> tuple[int, int]:
    start = text.rfind(piece) if occurrence == -1 else text.find(piece)
    return start, start + len(piece)


def test_answer_span_maps_to_its_tokens(tokenizer):
    alignment = align_text(tokenizer, TEXT, [_span(TEXT, " 48213.")])
    (positions,) = alignment.span_positions
    assert len(positions) == 7  # " ", five single digits, "."
    assert tokenizer.decode(alignment.ids[list(positions)]) == " 48213."
    assert alignment.mode == "text"


def test_span_starting_inside_a_token_is_unaligned(tokenizer):
    start = TEXT.rfind(" flight") + 2  # "light 48213." starts inside " flight"
    alignment = align_text(tokenizer, TEXT, [(start, len(TEXT)), _span(TEXT, " 48213.")])
    assert alignment.span_positions[0] is None and alignment.span_positions[1] is not None


def test_span_at_position_zero_is_unaligned(tokenizer):
    assert align_text(tokenizer, TEXT, [(0, 5)]).span_positions == (None,)


def test_multibyte_character_span(tokenizer):
    """"é" is two byte-level tokens with the same offsets: the span takes both, in order."""
    alignment = align_text(tokenizer, TEXT, [_span(TEXT, "é 90210.")])
    (positions,) = alignment.span_positions
    assert tokenizer.decode(alignment.ids[list(positions)]) == "é 90210."


def test_bos_shifts_positions_by_one(tokenizer, bos_tokenizer):
    spans = [_span(TEXT, " 48213."), _span(TEXT, " flight", 0), (0, 5)]
    plain, with_bos = align_text(tokenizer, TEXT, spans), align_text(bos_tokenizer, TEXT, spans)
    assert with_bos.ids[0] == 0 and len(with_bos.ids) == len(plain.ids) + 1
    for a, b in zip(plain.span_positions[:2], with_bos.span_positions[:2]):
        assert [p + 1 for p in a] == list(b)
        assert (plain.ids[list(a)] == with_bos.ids[list(b)]).all()
    # After a BOS, the first character is predictable (from the BOS).
    assert plain.span_positions[2] is None and with_bos.span_positions[2][0] == 1


def test_stored_ids_align_as_text_mode(tokenizer):
    spans = [_span(TEXT, " 48213."), _span(TEXT, "é 90210."), _span(TEXT, " flight", 0)]
    ids = tokenizer(TEXT)["input_ids"]
    assert stored_ids_problem(tokenizer, TEXT, ids) is None
    stored = align_stored_ids(tokenizer, TEXT, ids, spans)
    assert stored.span_positions == align_text(tokenizer, TEXT, spans).span_positions
    assert stored.mode == "stored_ids"
    start = TEXT.rfind(" flight") + 2
    assert align_stored_ids(tokenizer, TEXT, ids, [(start, len(TEXT))]).span_positions == (None,)


def test_stored_ids_problems(tokenizer):
    ids = tokenizer(TEXT)["input_ids"]
    assert "no qwen_* token ids" in stored_ids_problem(tokenizer, TEXT, None)
    assert "outside the model's vocabulary" in stored_ids_problem(tokenizer, TEXT, ids + [151_000])
    assert "does not decode" in stored_ids_problem(tokenizer, TEXT, ids[:-1])


def test_auto_mode_uses_consistent_stored_ids_and_falls_back_otherwise(tokenizer):
    record = facts_record()
    ids = tokenizer(record["text"])["input_ids"]
    good = items_from_records([({**record, "qwen_ids": ids}, "row 0")], "facts")[0]
    assert good.stored_ids_field == "qwen_ids"
    alignment, note = align_item(tokenizer, good, "auto")
    assert alignment.mode == "stored_ids" and note is None
    assert alignment.span_positions == align_item(tokenizer, good, "text")[0].span_positions

    shuffled = dataclasses.replace(good, stored_ids=tuple(reversed(ids)))
    alignment, note = align_item(tokenizer, shuffled, "auto")
    assert alignment.mode == "text" and "does not decode" in note and "text mode" in note
    alignment, note = align_item(tokenizer, items_from_records([(record, "row 0")], "facts")[0], "auto")
    assert alignment.mode == "text" and "no qwen_* token ids" in note
