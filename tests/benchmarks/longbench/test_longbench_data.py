"""Loading LongBench records from every supported source, and the record checks."""

from __future__ import annotations

import json
import zipfile

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jaxeval.benchmarks.longbench import data as lb_data
from jaxeval.benchmarks.longbench.data import load_config, validate_record
from jaxeval.benchmarks.longbench.tasks import CONFIGS, DATASETS, E_DATASETS, SHIPPED_SAMPLE
from jaxeval.errors import DataError
from longbench_helpers import record, write_jsonl

RECORDS = [record(_id=f"{i:048x}", input=f"question {i}") for i in range(3)]


def test_thirty_four_configs():
    assert len(DATASETS) == 21 and len(E_DATASETS) == 13 and len(CONFIGS) == 34
    assert DATASETS[0] == "narrativeqa" and DATASETS[-1] == "repobench-p"
    assert "qasper_e" in CONFIGS and "narrativeqa_e" not in CONFIGS


def test_local_folder_flat_and_data_subfolder(tmp_path):
    write_jsonl(tmp_path / "flat" / "narrativeqa.jsonl", RECORDS)
    write_jsonl(tmp_path / "unzipped" / "data" / "narrativeqa.jsonl", RECORDS)
    for folder in ("flat", "unzipped"):
        records = load_config(tmp_path / folder, "narrativeqa")
        assert [r.input for r in records] == ["question 0", "question 1", "question 2"]  # order kept
        assert [r.index for r in records] == [0, 1, 2]
        assert records[0].answers == ("Ada",) and records[0].all_classes is None
        assert "narrativeqa.jsonl, line 1" in records[0].origin


def test_data_zip(tmp_path):
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("data/qasper_e.jsonl", "".join(json.dumps(r) + "\n" for r in RECORDS))
    records = load_config(archive, "qasper_e")
    assert len(records) == 3 and records[0].config == "qasper_e"
    with pytest.raises(DataError, match="no data/qasper.jsonl inside"):
        load_config(archive, "qasper")


def test_parquet_configs(tmp_path):
    (tmp_path / "trec").mkdir()
    rows = [record(dataset="trec", all_classes=["City", "Date"], answers=["City"])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "trec" / "test-00000-of-00001.parquet")
    assert load_config(tmp_path, "trec")[0].all_classes == ("City", "Date")


def test_hub_id_goes_through_data_zip(tmp_path, monkeypatch):
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("data/lcc.jsonl", json.dumps(record(dataset="lcc")) + "\n")
    asked = []
    monkeypatch.setattr(lb_data, "download_data_zip", lambda repo_id: asked.append(repo_id) or archive)
    assert len(load_config("THUDM/LongBench", "lcc")) == 1 and asked == ["THUDM/LongBench"]


def test_hub_failure_is_one_clear_error(monkeypatch):
    import huggingface_hub

    def offline(**kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(DataError, match="could not fetch data.zip"):
        load_config("THUDM/LongBench", "lcc")


@pytest.mark.parametrize("source,message", [("does/not/exist/here", "no such folder"),
                                            ("nowhere", "no such folder")])
def test_bad_sources(source, message):
    with pytest.raises(DataError, match=message):
        load_config(source, "qasper")


def test_unknown_config_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="unknown LongBench config 'narrativeqa_e'"):
        load_config(tmp_path, "narrativeqa_e")
    with pytest.raises(DataError, match="no qasper.jsonl"):
        load_config(tmp_path, "qasper")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(DataError, match="data.zip"):
        load_config(tmp_path / "notes.txt", "qasper")


def test_bad_json_names_file_and_line(tmp_path):
    write_jsonl(tmp_path / "qasper.jsonl", [record(), "{not json"])
    with pytest.raises(DataError, match=r"qasper.jsonl, line 2: not valid JSON"):
        load_config(tmp_path, "qasper")


@pytest.mark.parametrize("change,field,problem", [
    ({"answers": []}, "answers", "at least one gold answer"),
    ({"answers": "Ada"}, "answers", "list of strings"),
    ({"answers": ["Ada", 3]}, "answers", "list of strings"),
    ({"length": "12"}, "length", "integer"),
    ({"length": True}, "length", "integer"),
    ({"context": None}, "context", "string"),
    ({"all_classes": "City"}, "all_classes", "null or a list"),
])
def test_record_checks_name_file_id_and_field(tmp_path, change, field, problem):
    write_jsonl(tmp_path / "qasper.jsonl", [record(), record(_id="f" * 48, **change)])
    with pytest.raises(DataError) as error:
        load_config(tmp_path, "qasper")
    message = str(error.value)
    assert "qasper.jsonl, line 2" in message and f"_id '{'f' * 48}'" in message
    assert f"field '{field}'" in message and problem in message


def test_missing_fields_and_set_specific_checks():
    for field in ("input", "context", "answers", "length", "dataset", "language", "all_classes", "_id"):
        broken = record()
        del broken[field]
        with pytest.raises(DataError, match=f"field '{field}'"):
            validate_record(broken, "qasper", "here")
    with pytest.raises(DataError, match="class list"):
        validate_record(record(dataset="lsht"), "lsht", "here")
    with pytest.raises(DataError, match=r"answers\[0\]"):
        validate_record(record(answers=["the third"]), "passage_retrieval_en_e", "here")
    validate_record(record(answers=["段落27"]), "passage_retrieval_zh", "here")
    with pytest.raises(DataError, match="JSON object"):
        validate_record([1, 2], "qasper", "here")


def test_embedded_sample_is_complete_and_valid():
    files = sorted(path.name for path in SHIPPED_SAMPLE.glob("*.jsonl"))
    assert files == sorted(f"{config}.jsonl" for config in CONFIGS)
    size = sum(path.stat().st_size for path in SHIPPED_SAMPLE.glob("*.jsonl"))
    assert size < 1_000_000
    for config in CONFIGS:
        records = load_config(SHIPPED_SAMPLE, config)
        assert len(records) >= 2
        assert len({r.id for r in records}) == len(records)
        assert all(len(r.id) == 48 and int(r.id, 16) >= 0 for r in records)
        assert all(len(r.context) < 6000 for r in records)
    assert (SHIPPED_SAMPLE / "SOURCE.md").read_text().count("CC BY-SA 3.0") >= 1
