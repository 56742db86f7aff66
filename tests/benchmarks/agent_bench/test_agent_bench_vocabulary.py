"""--mode auto feeds the stored qwen_* ids only to the tokenizer the dataset declares (vocabulary size and
token -> id table), and otherwise re-tokenizes the texts, saying why."""

from __future__ import annotations

import json
import logging
import shutil

import numpy as np
import pytest

from agent_bench_helpers import TINY_TOKENIZER, OracleBackend, facts_record, write_jsonl
from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, run_agent_bench
from jaxeval.benchmarks.agent_bench.vocabulary import (
    IDENTITY_FILE, QWEN3_5, declared_tokenizer, identity_file, identity_of, table_sha256, vocabulary_problem,
)
from jaxeval.errors import DataError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def tokenizer_folder(path, edit=None):
    """A local tokenizer folder in the hub layout (tokenizer.json, tokenizer_config.json), copied from the
    embedded tokenizer; edit(tokenizer.json as a dict) changes it first."""
    path.mkdir(parents=True)
    for name in TOKENIZER_FILES:
        shutil.copy(TINY_TOKENIZER / name, path / name)
    if edit is not None:
        raw = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
        edit(raw)
        (path / "tokenizer.json").write_text(json.dumps(raw), encoding="utf-8")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def swap_two_ids(raw):
    """The same tokens and size, two ids exchanged: another token -> id table."""
    vocab = raw["model"]["vocab"]
    a, b = "ĠAtlantic", "ĠOcean"
    if a not in vocab or b not in vocab:  # any two ordinary tokens do
        a, b = sorted(vocab, key=vocab.get)[300:302]
    vocab[a], vocab[b] = vocab[b], vocab[a]


def stored_ids_data(folder, tokenizer, declare=None):
    """A facts item whose qwen_ids decode to its text but differ from the tokenizer's own ids (its first 12
    characters tokenized one by one), in a folder declaring `declare`'s tokenizer."""
    record = facts_record()
    text = record["text"]
    ids = [i for ch in text[:12] for i in tokenizer(ch)["input_ids"]] + tokenizer(text[12:])["input_ids"]
    assert ids != tokenizer(text)["input_ids"]
    write_jsonl(folder, [{**record, "qwen_ids": ids}])
    if declare is not None:
        (folder / IDENTITY_FILE).write_text(identity_file(declare, "hand-made"), encoding="utf-8")
    return ids


def test_a_local_copy_of_the_declared_tokenizer_is_recognised(tokenizer, tmp_path):
    copy = tokenizer_folder(tmp_path / "tok")
    declared = declared_tokenizer(SHIPPED_DATA)  # the sample was built with the embedded tokenizer
    assert identity_of(copy).sha256 == declared.sha256 and identity_of(copy).vocab_size == len(tokenizer) == 4096
    assert vocabulary_problem(copy, declared) is None
    swapped = tokenizer_folder(tmp_path / "swapped", swap_two_ids)
    assert len(swapped) == len(copy)
    assert "token -> id table differs" in vocabulary_problem(swapped, declared)
    assert "vocabulary size differs" in vocabulary_problem(copy, QWEN3_5)
    assert table_sha256({"a": 0, "b": 1}) != table_sha256({"a": 1, "b": 0})


def test_auto_feeds_the_stored_ids_to_the_declared_tokenizer(tokenizer, tmp_path):
    data = tmp_path / "data"
    ids = stored_ids_data(data, tokenizer, declare=tokenizer)
    model_tokenizer = tokenizer_folder(tmp_path / "model")  # the model's own folder, the same tokenizer
    backend = OracleBackend()
    result = run_agent_bench(backend, model_tokenizer, data, lengths=("8k",))
    assert result["mode"] == "stored_ids" and result["mode_notes"] == []
    assert np.array_equal(backend.calls[0][0], ids)
    assert result["sets"]["facts"]["8k"]["query_accuracy"] == 1.0


def test_another_tokenizer_re_tokenizes_with_a_logged_reason(tokenizer, tmp_path, caplog):
    data = tmp_path / "data"
    stored_ids_data(data, tokenizer, declare=tokenizer)
    swapped = tokenizer_folder(tmp_path / "swapped", swap_two_ids)
    backend = OracleBackend()
    with caplog.at_level(logging.WARNING, logger="jaxeval.benchmarks.agent_bench.vocabulary"):
        result = run_agent_bench(backend, swapped, data, lengths=("8k",))
    assert result["mode"] == "text" and result["mode_requested"] == "auto"
    assert np.array_equal(backend.calls[0][0], swapped(facts_record()["text"])["input_ids"])
    [note] = result["mode_notes"]
    assert "is not the dataset's hand-made (vocab_size 4096" in note and "token -> id table differs" in note
    assert "re-tokenized the texts (text mode)" in note and note in caplog.text
    # no declaration: the card's Qwen3.5 tokenizer, which the embedded one is not
    (data / IDENTITY_FILE).unlink()
    result = run_agent_bench(OracleBackend(), tokenizer, data, lengths=("8k",))
    assert result["mode"] == "text" and "the dataset's Qwen3.5 (vocab_size 248077" in result["mode_notes"][0]


@pytest.mark.parametrize("content,message", [
    ("{", "not a readable JSON file"),
    ('{"name": "x", "vocab_size": "10", "sha256": "' + "0" * 64 + '"}', "field 'vocab_size'='10' must be"),
    ('{"name": "x", "vocab_size": 10, "sha256": "abc"}', "field 'sha256' must be 64 hex digits"),
])
def test_a_bad_declaration_is_one_clear_error(tmp_path, content, message):
    (tmp_path / IDENTITY_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as info:
        declared_tokenizer(tmp_path)
    assert str(tmp_path / IDENTITY_FILE) in str(info.value)


def test_a_table_differing_only_where_the_texts_do_not_reach_passes_the_probe(tokenizer, tmp_path, caplog):
    """The card's own test: the same vocabulary size and the stored ids for a probe set of strings (the
    start of one item per split). Two ids the text never uses exchanged: another table hash, same probe."""
    record = facts_record()
    own = tokenizer(record["text"], add_special_tokens=False)["input_ids"]
    unused = [token for token, i in sorted(tokenizer.get_vocab().items(), key=lambda x: x[1])
              if i not in set(own) and i > 300][:2]

    def swap_unused(raw):
        vocab = raw["model"]["vocab"]
        a, b = unused
        vocab[a], vocab[b] = vocab[b], vocab[a]

    data = tmp_path / "data"
    write_jsonl(data, [{**record, "qwen_ids": own}])
    (data / IDENTITY_FILE).write_text(identity_file(tokenizer, "hand-made"), encoding="utf-8")
    other = tokenizer_folder(tmp_path / "other", swap_unused)
    assert "token -> id table differs" in vocabulary_problem(other, declared_tokenizer(data))
    with caplog.at_level(logging.INFO, logger="jaxeval.benchmarks.agent_bench.vocabulary"):
        result = run_agent_bench(OracleBackend(), other, data, lengths=("8k",))
    assert result["mode"] == "stored_ids" and result["mode_notes"] == []
    assert "the probe texts tokenize to their stored ids" in caplog.text
    # the char-by-char ids of stored_ids_data decode to the text but are not the tokenizer's: no probe match
    stored_ids_data(data, tokenizer, declare=tokenizer)
    assert run_agent_bench(OracleBackend(), other, data, lengths=("8k",))["mode"] == "text"
