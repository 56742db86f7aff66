"""Loading and checking longctx-agent-bench items: the shipped sample, file formats, schema errors."""

from __future__ import annotations

import copy

import pytest

from agent_bench_helpers import facts_record, write_jsonl, write_parquet
from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, items_from_records, load_split, read_hub_records
from jaxeval.errors import DataError

SAMPLE_SIZES = {"8k": (4, 8193), "32k": (2, 32769)}


# The shipped sample ---------------------------------------------------------------------

@pytest.mark.parametrize("split", ["8k", "32k"])
def test_shipped_sample_loads_with_exact_sizes_and_spans(tokenizer, split):
    items = load_split(SHIPPED_DATA, "facts", split)
    n_items, n_tokens = SAMPLE_SIZES[split]
    assert len(items) == n_items
    for item in items:
        assert len(tokenizer(item.text)["input_ids"]) == n_tokens
        assert len(item.targets) == 8
        assert item.source["articles"] and item.source["dataset"] == "Salesforce/wikitext"
        names = {t.fact.split()[0] for t in item.targets}
        assert len(names) == 8, "names must be distinct within an item"
        spans = sorted([t.fact_char for t in item.targets] + [t.answer_char for t in item.targets])
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "facts and queries overlap"
        for target in item.targets:
            assert item.text[slice(*target.answer_char)] == target.answer
            assert item.text[slice(*target.fact_char)] == target.fact
            assert target.answer.startswith(" ") and target.answer.endswith(".")
            assert len(target.answer) == 7 and target.answer[1:6].isdigit()
            assert target.fact.endswith(target.answer[1:]) and target.fact_char[1] < target.answer_char[0]
            assert target.distance_tokens >= 512  # "far" in the card's sense
            # The query repeats the fact's words right before the answer.
            fact_words = target.fact[: -len(target.answer)]
            assert item.text[: target.answer_char[0]].endswith(fact_words)


def test_shipped_sample_ids_are_unique_across_splits():
    ids = [item.id for split in SAMPLE_SIZES for item in load_split(SHIPPED_DATA, "facts", split)]
    assert len(ids) == len(set(ids))


# Same items from every source -------------------------------------------------------------

def test_parquet_jsonl_and_datasets_give_identical_items(tmp_path):
    records = [facts_record("hand-000"), facts_record("hand-001", facts=(("Nora won ticket", "33301"),))]
    from_parquet = load_split(write_parquet(tmp_path / "pq", records).parents[1], "facts", "8k")
    from_jsonl = load_split(write_jsonl(tmp_path / "js", records).parents[1], "facts", "8k")
    assert from_parquet == from_jsonl
    assert [item.id for item in from_parquet] == ["hand-000", "hand-001"]

    import datasets

    rows = datasets.load_dataset("parquet", data_files=str(tmp_path / "pq/facts/8k-00000-of-00001.parquet"),
                                 split="train", cache_dir=str(tmp_path / "cache")).to_list()
    assert items_from_records(((row, f"row {i}") for i, row in enumerate(rows)), "facts") == from_parquet


def test_hub_path_on_a_folder_laid_out_as_the_hub_repo(tmp_path):
    """read_hub_records calls datasets.load_dataset(data, config, split=split), as for the hub id."""
    import shutil

    shutil.copytree(SHIPPED_DATA / "facts", tmp_path / "repo" / "facts")
    (tmp_path / "repo" / "README.md").write_text(
        "---\nconfigs:\n- config_name: facts\n  data_files:\n"
        "  - split: 8k\n    path: facts/8k-*.parquet\n  - split: 32k\n    path: facts/32k-*.parquet\n---\n")
    records = read_hub_records(str(tmp_path / "repo"), "facts", "8k", cache_dir=str(tmp_path / "cache"))
    via_datasets = items_from_records(records, "facts")
    assert via_datasets == load_split(SHIPPED_DATA, "facts", "8k")


# Schema errors name the file, the row or id, and the field -----------------------------------

def _load_error(tmp_path, record) -> str:
    write_parquet(tmp_path, [facts_record("good-000"), record])
    with pytest.raises(DataError) as error:
        load_split(tmp_path, "facts", "8k")
    return str(error.value)


def test_missing_field(tmp_path):
    record = facts_record("bad-001")
    del record["targets"][1]["fact"]
    message = _load_error(tmp_path, record)
    assert "8k-00000-of-00001.parquet" in message and "row 1" in message and "'bad-001'" in message
    assert "targets[1].fact" in message and "missing" in message


def test_missing_top_level_field_in_jsonl(tmp_path):
    record = facts_record("bad-001")
    del record["text"]
    write_jsonl(tmp_path, [facts_record("good-000"), record])
    with pytest.raises(DataError, match=r"8k\.jsonl, line 2 \(id 'bad-001'\), field 'text': missing"):
        load_split(tmp_path, "facts", "8k")


def test_span_outside_text(tmp_path):
    record = facts_record("bad-001")
    record["targets"][0]["answer_char"] = [len(record["text"]) - 2, len(record["text"]) + 5]
    message = _load_error(tmp_path, record)
    assert "row 1" in message and "'bad-001'" in message and "targets[0].answer_char" in message
    assert "outside 'text'" in message


@pytest.mark.parametrize("span", [[10, 10], [12, 5], [3], [1.0, 5.0]])
def test_span_not_start_end(tmp_path, span):
    record = facts_record("bad-001")
    record["targets"][1]["fact_char"] = span
    message = _jsonl_error(tmp_path, record)
    assert "8k.jsonl, line 1 (id 'bad-001')" in message and "targets[1].fact_char" in message


def _jsonl_error(tmp_path, record) -> str:
    write_jsonl(tmp_path, [record])
    with pytest.raises(DataError) as error:
        load_split(tmp_path, "facts", "8k")
    return str(error.value)


def test_wrong_type(tmp_path):
    record = facts_record("bad-001")
    record["targets"][0]["distance_tokens"] = "150"
    message = _jsonl_error(tmp_path, record)
    assert ("line 1 (id 'bad-001'), field 'targets[0].distance_tokens': expected an integer, got str"
            in message)


def test_answer_text_mismatch(tmp_path):
    record = copy.deepcopy(facts_record("bad-001"))
    record["targets"][0]["answer"] = " 99999."
    message = _jsonl_error(tmp_path, record)
    assert "targets[0].answer_char" in message and "' 99999.'" in message and "' 48213.'" in message


def test_duplicate_id(tmp_path):
    message = _load_error(tmp_path, facts_record("good-000"))
    assert "field 'id'" in message and "used twice" in message


def test_corrupt_parquet_names_the_file(tmp_path):
    path = write_parquet(tmp_path, [facts_record()])
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(DataError, match=r"8k-00000-of-00001\.parquet: not a readable Parquet file"):
        load_split(tmp_path, "facts", "8k")


def test_bad_json_line(tmp_path):
    path = write_jsonl(tmp_path, [facts_record()])
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(DataError, match=r"8k\.jsonl, line 2: not valid JSON"):
        load_split(tmp_path, "facts", "8k")


def test_missing_split_and_folder(tmp_path):
    write_parquet(tmp_path, [facts_record()])
    with pytest.raises(DataError, match=r"no 32k\*\.parquet or 32k\*\.jsonl file for config 'facts'"):
        load_split(tmp_path, "facts", "32k")
    with pytest.raises(DataError, match="no such folder"):
        load_split(tmp_path / "nowhere", "facts", "8k")
    with pytest.raises(DataError, match="config 'tools' is not supported yet; available: facts, tool_calls"):
        load_split(tmp_path, "tools", "8k")
