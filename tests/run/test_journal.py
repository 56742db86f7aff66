"""The journal: get/put, batched durable writes, torn last lines, refusal of other runs' journals."""

from __future__ import annotations

import json

import fsspec
import pytest

from jaxeval.errors import DataError
from jaxeval.run.journal import Journal, JournalMismatchError, journaled
from jaxeval.run.resumable import map_journaled

IDENTITY = {"model_fingerprint": "abc", "config_hash": "123", "tasks": ["t"], "process": [0, 1]}


def _fill(path, n: int, **kwargs) -> None:
    with Journal(str(path), IDENTITY, **kwargs) as journal:
        for i in range(n):
            journal.put(f"t/c/s/item-{i}/0", {"i": i, "x": i / 7, "pair": (i, -i)})


def test_records_round_trip_through_json_and_survive_reopening(tmp_path):
    path = tmp_path / "j.jsonl"
    _fill(path, 5)
    journal = Journal(str(path), IDENTITY)
    assert journal.resumed == 5 and len(journal) == 5
    assert journal.get("t/c/s/item-3/0") == {"i": 3, "x": 3 / 7, "pair": [3, -3]}  # tuples come back as lists
    assert journal.get("t/c/s/item-9/0") is None


def test_writes_in_batches_and_flushes_on_close(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(str(path), IDENTITY, flush_every=3, flush_seconds=1e9)
    for i in range(4):
        journal.put(f"k{i}", {"i": i})
    assert len(path.read_text().splitlines()) == 1 + 3  # header + the first full batch
    journal.close()
    assert len(path.read_text().splitlines()) == 1 + 4


def test_a_key_is_stored_once(tmp_path):
    path = tmp_path / "j.jsonl"
    with Journal(str(path), IDENTITY) as journal:
        journal.put("k", {"v": 1})
        journal.put("k", {"v": 2})
    assert Journal(str(path), IDENTITY).get("k") == {"v": 1}
    assert len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize("cut", [1, 7, 20, -1])
def test_a_torn_last_line_is_dropped_and_the_file_repaired(tmp_path, cut):
    path = tmp_path / "j.jsonl"
    _fill(path, 4)
    lines = path.read_bytes().splitlines(keepends=True)
    torn = lines[-1][:cut] if cut > 0 else lines[-1][:-1]  # -1: the whole line but its newline
    path.write_bytes(b"".join(lines[:-1]) + torn)
    journal = Journal(str(path), IDENTITY)
    assert len(journal) == 3 and journal.get("t/c/s/item-3/0") is None
    journal.put("t/c/s/item-3/0", {"again": True})
    journal.close()
    reopened = Journal(str(path), IDENTITY)
    assert reopened.get("t/c/s/item-3/0") == {"again": True} and len(reopened) == 4
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_a_torn_header_starts_over(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"identity": {"model')
    assert len(Journal(str(path), IDENTITY)) == 0
    assert json.loads(path.read_text().splitlines()[0])["identity"] == IDENTITY


def test_damage_before_the_last_line_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "j.jsonl"
    _fill(path, 3)
    lines = path.read_text().splitlines()
    lines[2] = "garbage"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"j\.jsonl, line 3: not a journal entry"):
        Journal(str(path), IDENTITY)


@pytest.mark.parametrize("field", ["model_fingerprint", "config_hash", "process"])
def test_another_runs_journal_is_never_reused(tmp_path, field):
    path = tmp_path / "j.jsonl"
    _fill(path, 2)
    with pytest.raises(JournalMismatchError, match=f"{field} is .* there"):
        Journal(str(path), {**IDENTITY, field: "other"})
    assert len(Journal(str(path), IDENTITY)) == 2  # and it is left as it was


def test_memory_filesystem_journal_resumes_and_drops_a_torn_line():
    url = "memory://journal-test/run.journal.jsonl"
    _fill(url, 3, flush_every=2)
    fs = fsspec.filesystem("memory")
    with fs.open("/journal-test/run.journal.jsonl", "ab") as f:
        f.write(b'{"key": "t/c/s/item-3/0", "rec')
    journal = Journal(url, IDENTITY)
    assert len(journal) == 3 and journal.get("t/c/s/item-2/0")["i"] == 2
    journal.put("t/c/s/item-3/0", {"i": 3})
    journal.close()
    assert len(Journal(url, IDENTITY)) == 4
    fs.rm("/journal-test", recursive=True)


def test_journaled_computes_only_what_is_missing(tmp_path):
    journal = Journal(str(tmp_path / "j.jsonl"), IDENTITY)
    calls = []
    assert journaled(journal, "k", lambda: calls.append(1) or {"v": (1, 2)}) == {"v": [1, 2]}
    assert journaled(journal, "k", lambda: calls.append(1) or {"v": 3}) == {"v": [1, 2]}
    assert journaled(None, "k", lambda: {"v": (1,)}) == {"v": [1]}  # same form without a journal
    assert calls == [1]


def test_map_journaled_recomputes_whole_fixed_batches(tmp_path):
    journal = Journal(str(tmp_path / "j.jsonl"), IDENTITY)
    keys = [f"k{i}" for i in range(7)]
    journal.put("k1", {"i": 1, "first": 0})  # k0..k2 are one batch: k1 is kept, k0 and k2 computed with it
    journal.put("k3", {"i": 3, "first": 3})
    journal.put("k4", {"i": 4, "first": 3})
    journal.put("k5", {"i": 5, "first": 3})  # k3..k5 all done: never computed
    batches = []

    def compute(batch):
        batches.append(batch)
        return [{"i": i, "first": batch[0]} for i in batch]
    records = map_journaled(journal, keys, compute, batch_size=3)
    assert batches == [[0, 1, 2], [6]]
    assert [r["i"] for r in records] == list(range(7)) and records[1] == {"i": 1, "first": 0}
    with pytest.raises(DataError, match="share the key 'k1'"):
        map_journaled(journal, ["k1", "k1"], compute)


def test_a_flush_from_another_thread_waits_for_the_write_in_progress(tmp_path):
    """The signal watchdog flushes from its thread: never in the middle of the main thread's write."""
    journal = Journal(str(tmp_path / "j.jsonl"), IDENTITY, flush_every=100)
    journal.put("k", {"v": 1})
    with journal.lock:  # the main thread is writing
        assert journal.flush(lock_timeout=0.05) is False
    assert journal.flush(lock_timeout=0.05) is True
    assert [json.loads(line).get("key") for line in (tmp_path / "j.jsonl").read_text().splitlines()] == [None, "k"]


def test_a_journal_without_samples_never_blocks_a_rerun(tmp_path):
    path = tmp_path / "j.jsonl"
    Journal(str(path), {**IDENTITY, "model_fingerprint": "other model"}).close()  # failed before its first sample
    journal = Journal(str(path), IDENTITY)
    assert len(journal) == 0 and "held no sample" in journal.notes[0]
    assert json.loads(path.read_text().splitlines()[0])["identity"] == IDENTITY
    path.write_text('{"jaxeval_journal": 0, "identity": {}}\n')  # another version, empty: replaced too
    assert len(Journal(str(path), IDENTITY)) == 0


def _damage(path, line_numbers) -> None:
    lines = path.read_text().splitlines()
    for number in line_numbers:
        lines[number - 1] = lines[number - 1][:17] + "\x00garbage"
    path.write_text("\n".join(lines) + "\n")


def test_recover_keeps_every_intact_line_and_counts_the_dropped(tmp_path):
    path = tmp_path / "j.jsonl"
    _fill(path, 6)
    _damage(path, [3, 5])  # items 1 and 3
    with pytest.raises(DataError, match=r"line 3: .*--journal recover to keep its 4 intact samples and drop 2"):
        Journal(str(path), IDENTITY)
    journal = Journal(str(path), IDENTITY, recover=True)
    assert journal.resumed == 4 and journal.notes == [f"{path}: recovered 4 samples, dropped 2 damaged line(s)"]
    assert journal.get("t/c/s/item-1/0") is None and journal.get("t/c/s/item-2/0")["i"] == 2
    journal.put("t/c/s/item-1/0", {"i": 1})
    journal.close()
    reopened = Journal(str(path), IDENTITY)  # a clean journal again: no flag needed
    assert len(reopened) == 5 and reopened.notes == []


def test_recover_rebuilds_a_damaged_header(tmp_path):
    path = tmp_path / "j.jsonl"
    _fill(path, 3)
    _damage(path, [1])
    with pytest.raises(DataError, match="line 1: not a jaxeval journal header"):
        Journal(str(path), IDENTITY)
    journal = Journal(str(path), IDENTITY, recover=True)
    assert journal.resumed == 3 and "rewrote its damaged header" in journal.notes[0]
    assert len(Journal(str(path), IDENTITY)) == 3


def test_a_model_identity_mismatch_names_the_parts_that_differ(tmp_path):
    path = tmp_path / "j.jsonl"
    model = {"weights": "w1", "tokenizer": "t1", "chat_template": None, "config": "c", "dtype": "float32"}
    with Journal(str(path), {"model": model}) as journal:
        journal.put("k", {"v": 1})
    with pytest.raises(JournalMismatchError) as error:
        Journal(str(path), {"model": {**model, "weights": "w2", "chat_template": "t"}})
    assert "model: the chat template and the model's weights (checkpoint files' content) differ" in str(error.value)
