"""Loading the released layout and configs; bad records raise one DataError naming file, id and field."""

from __future__ import annotations

import json

import pytest
from helmet_helpers import SAMPLE

from jaxeval.benchmarks.helmet.data import load_records, resolve_file
from jaxeval.benchmarks.helmet.tasks import dataset_key, family, helmet_units, load_config
from jaxeval.errors import ConfigError, DataError


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_configs_cover_every_category_and_length():
    units = helmet_units()
    assert {u.length for u in units} == {"8k", "16k", "32k", "64k", "128k"}
    assert {u.category for u in units} == {"recall", "rag", "rerank", "cite", "longqa", "summ", "icl"}
    recall = load_config("recall_short")
    assert [(u.dataset, u.length, u.generation_max_length) for u in recall[:2]] == [
        ("ruler_niah_mk_2", "8k", 50), ("ruler_niah_mk_2", "16k", 50)]
    assert all(u.stop_new_line_in_yaml for u in load_config("rag"))  # recorded, never applied


def test_family_dispatch_and_keys():
    assert family("kilt_popqa_3") == "rag" and family("narrativeqa_7892") == "narrativeqa"
    assert dataset_key("icl_banking77_360shot_balance") == "icl_banking77"
    assert dataset_key("alce_asqa_30") == "alce_asqa" and dataset_key("infbench_qa_eng_7982") == "infbench_qa_eng"
    with pytest.raises(ConfigError, match="unknown HELMET dataset"):
        family("mystery")


def test_resolve_file_accepts_root_or_data_folder():
    assert resolve_file(SAMPLE, "data/json_kv/test_k105_dep6.jsonl").is_file()
    assert resolve_file(SAMPLE / "data", "data/json_kv/test_k105_dep6.jsonl").is_file()
    with pytest.raises(DataError, match="not found"):
        resolve_file(SAMPLE, "data/json_kv/test_k1800_dep6.jsonl")


@pytest.mark.parametrize("fam,dataset,row,message", [
    ("rag", "kilt_nq", {"id": "q7", "question": "q", "answers": [], "ctxs": []},
     r"line 1 \(id 'q7'\): field 'answers' must be a non-empty list of strings"),
    ("rag", "kilt_popqa_3", {"question": "q", "answers": ["a"], "ctxs": []}, "field 's_pop' missing"),
    ("rerank", "msmarco_rerank_psg", {"qid": "9", "query": "q", "ctxs": [{"id": "1", "text": "t"}]},
     r"\(qid '9'\): field 'ctxs' must be a non-empty list of \{id, text, label\}"),
    ("json_kv", "json_kv", {"context": "c", "question": "k", "answer": ["v"], "num_kvs": 2, "demos": [["a"]]},
     "field 'demos' must be a list of"),
    ("ruler", "ruler_niah_mk_2", {"context": "c", "query": "k", "outputs": ["1"]}, "field 'type_needle_v' missing"),
    ("alce", "alce_asqa_30", {"question": "q", "docs": [], "qa_pairs": [{"short_answers": "x"}]}, "qa_pairs"),
    ("infbench_choice_eng", "infbench_choice_eng_7982", {"context": "c", "question": "q", "answer": ["A", "A. x"]},
     "field 'options' missing"),
])
def test_bad_records_name_file_id_and_field(tmp_path, fam, dataset, row, message):
    path = write_jsonl(tmp_path / "f.jsonl", [row])
    with pytest.raises(DataError, match=message) as error:
        load_records(path, fam, dataset)
    assert str(path) in str(error.value)


def test_invalid_json_line_is_named(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({"question": "q", "answers": ["a"], "ctxs": []}) + '\n{oops\n')
    with pytest.raises(DataError, match=r"f.jsonl, line 2: not valid JSON"):
        load_records(path, "rag", "kilt_nq")


def test_sample_files_are_valid():
    for unit in helmet_units(("recall", "rag"), ["8k"]):
        assert load_records(resolve_file(SAMPLE, unit.test_file), family(unit.dataset), unit.dataset)
