"""Records: the embedded sample, and bad input raising DataError naming file, record id and field."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jaxeval.benchmarks.longbench_pro.data import load_records
from jaxeval.benchmarks.longbench_pro.tasks import PRIMARY_TASKS, SECONDARY_TASKS
from jaxeval.errors import DataError


def test_embedded_sample_covers_every_primary_task_in_both_languages():
    records = load_records()
    assert Counter(r.primary_task for r in records) == {p: 3 for p in PRIMARY_TASKS}
    assert Counter(r.language for r in records) == {"English": 22, "Chinese": 11}
    for r in records:
        assert SECONDARY_TASKS[r.secondary_task].primary == r.primary_task
        marker = "[答案]" if r.is_zh else "[Answer]"
        assert marker in r.question_nonthinking and marker in r.question_thinking
        assert r.question_thinking != r.question_nonthinking
        if SECONDARY_TASKS[r.secondary_task].metric == "Summary":
            assert len(r.answer) == 3


def good_record(**changes):
    record = {"id": "ab" * 32, "context": "ctx", "language": "English", "token_length": "8k",
              "primary_task": "T3. Evidence-Grounded QA", "secondary_task": "T3.2 Single-Hop Fact QA",
              "contextual_requirement": "Partial", "question_nonthinking": "q", "question_thinking": "qt",
              "answer": ["B"], "difficulty": "Easy"}
    record.update(changes)
    return {k: v for k, v in record.items() if v is not ...}


@pytest.mark.parametrize("changes, field", [
    ({"answer": ...}, "answer"),
    ({"answer": []}, "answer"),
    ({"answer": "B"}, "answer"),
    ({"context": None}, "context"),
    ({"language": "French"}, "language"),
    ({"token_length": "10k"}, "token_length"),
    ({"secondary_task": "T3.9 Nothing"}, "secondary_task"),
    ({"primary_task": "T1. Retrieval & Ranking"}, "primary_task"),
    ({"difficulty": ...}, "difficulty"),
])
def test_bad_record_names_file_id_and_field(tmp_path, changes, field):
    path = tmp_path / "longbench_pro.json"
    path.write_text(json.dumps([good_record(id="cd" * 32), good_record(**changes)]))
    with pytest.raises(DataError) as error:
        load_records(tmp_path)
    message = str(error.value)
    assert str(path) in message and "record 1" in message and "ab" * 32 in message and f"'{field}'" in message


def test_duplicate_id_and_not_an_array(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([good_record(), good_record()]))
    with pytest.raises(DataError, match="field 'id' repeats"):
        load_records(path)
    path.write_text(json.dumps({"records": []}))
    with pytest.raises(DataError, match="one JSON array"):
        load_records(path)
    with pytest.raises(DataError, match="no such file"):
        load_records(tmp_path / "missing.json")
