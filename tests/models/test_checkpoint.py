"""jaxeval's Orbax checkpoint format: save_checkpoint then load_model reads the same as the safetensors
folder it came from; a missing or corrupt checkpoint fails with CheckpointError naming what is wrong."""

from __future__ import annotations

import gc
import json
import shutil

import numpy as np
import pytest

import jaxeval
from jaxeval.errors import CheckpointError
from jaxeval.weights.orbax import is_jaxeval_checkpoint, save_checkpoint

IDS = (np.arange(50) * 7) % 61 + 3
POSITIONS = np.arange(1, 50)


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_llama_writer):
    """(safetensors folder, Orbax folder, float32 read of the safetensors folder)."""
    root = tmp_path_factory.mktemp("orbax")
    hf = tiny_llama_writer(root / "hf")
    (hf / "tokenizer_config.json").write_text("{}")  # stands in for tokenizer files: copied along
    model = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False)
    ckpt = root / "ckpt"
    save_checkpoint(ckpt, model.module.params(), json.loads((hf / "config.json").read_text()), "float32",
                    tokenizer_from=hf)
    return hf, ckpt, model.read(IDS, POSITIONS, IDS[POSITIONS])


def test_orbax_round_trip_reads_identically(saved):
    hf, ckpt, expected = saved
    assert is_jaxeval_checkpoint(ckpt) and not is_jaxeval_checkpoint(hf)
    assert (ckpt / "tokenizer_config.json").is_file()
    model = jaxeval.load_model(ckpt, dtype="float32", load_tokenizer=False)
    assert model.config == jaxeval.load_model(hf, dtype="float32", load_tokenizer=False).config
    got = model.read(IDS, POSITIONS, IDS[POSITIONS])
    np.testing.assert_array_equal(got.logprobs, expected.logprobs)
    np.testing.assert_array_equal(got.top1, expected.top1)
    other = jaxeval.load_model(ckpt, dtype="float32", attention="xla", load_tokenizer=False)
    np.testing.assert_allclose(other.read(IDS, POSITIONS, IDS[POSITIONS]).logprobs, expected.logprobs, atol=1e-5)


def test_orbax_bfloat16_round_trip(saved, tmp_path):
    hf, _, expected = saved
    model = jaxeval.load_model(hf, dtype="bfloat16", load_tokenizer=False)
    save_checkpoint(tmp_path, model.module.params(), json.loads((hf / "config.json").read_text()), "bfloat16")
    assert json.loads((tmp_path / "jaxeval.json").read_text())["dtype"] == "bfloat16"
    again = jaxeval.load_model(tmp_path, dtype="bfloat16", load_tokenizer=False)
    np.testing.assert_array_equal(again.read(IDS, POSITIONS, IDS[POSITIONS]).logprobs,
                                  model.read(IDS, POSITIONS, IDS[POSITIONS]).logprobs)
    np.testing.assert_allclose(again.read(IDS, POSITIONS, IDS[POSITIONS]).logprobs, expected.logprobs, atol=0.1)


def test_save_replaces_an_existing_checkpoint(saved, tmp_path):
    hf, ckpt, expected = saved
    folder = tmp_path / "ck"
    shutil.copytree(ckpt, folder)
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    params = model.module.params()
    params["final_norm"] = params["final_norm"] * 2
    save_checkpoint(folder, params, json.loads((hf / "config.json").read_text()), "float32")
    again = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    np.testing.assert_array_equal(np.asarray(again.module.params()["final_norm"]), np.asarray(params["final_norm"]))


def _copy(ckpt, tmp_path):
    folder = tmp_path / "ck"
    shutil.copytree(ckpt, folder)
    return folder


def _data_files(folder):
    return [f for f in (folder / "params").rglob("*") if f.is_file() and f.parent.name == "d"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # Orbax's abandoned reads
@pytest.mark.parametrize("corrupt, fragments", [
    (lambda f: shutil.rmtree(f / "params"), ["no params/ folder"]),
    (lambda f: [shutil.rmtree(f / "params"), (f / "params").mkdir()], ["no readable Orbax checkpoint metadata"]),
    (lambda f: (f / "params" / "_METADATA").unlink(), ["no readable Orbax checkpoint metadata"]),
    (lambda f: [p.write_bytes(p.read_bytes()[:len(p.read_bytes()) // 2]) for p in _data_files(f)],
     ["params"]),  # truncated array data / metadata
    (lambda f: [p.unlink() for p in (f / "params" / "ocdbt.process_0" / "d").iterdir()],
     ["cannot restore Orbax checkpoint"]),
    (lambda f: (f / "jaxeval.json").write_text("{oops"), ["jaxeval.json", "unreadable"]),
    (lambda f: (f / "jaxeval.json").write_text(json.dumps({"format": "other", "version": 1, "dtype": "float32"})),
     ["jaxeval.json", "format 'other'"]),
    (lambda f: (f / "jaxeval.json").write_text(json.dumps({"format": "jaxeval-orbax", "version": 1,
                                                           "dtype": "float99"})),
     ["jaxeval.json", "'dtype'='float99'"]),
])
def test_corrupt_checkpoint(saved, tmp_path, corrupt, fragments):
    folder = _copy(saved[1], tmp_path)
    corrupt(folder)
    with pytest.raises(CheckpointError) as info:
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    for fragment in fragments:
        assert fragment in str(info.value)
    gc.collect()  # Orbax's abandoned read coroutines warn when collected: here, under this test's filter


def test_checkpoint_disagreeing_with_config(saved, tmp_path):
    folder = _copy(saved[1], tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "intermediate_size": 40}))
    with pytest.raises(CheckpointError, match=r"tensor \['layers'\]\['w_down'\] has shape \[2, 48, 32\], "
                                              r"config.json implies \[2, 40, 32\]"):
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    (folder / "config.json").write_text(json.dumps({**config, "tie_word_embeddings": True}))
    with pytest.raises(CheckpointError, match=r"tensor \['lm_head'\] is stored but config.json implies no such"):
        jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)


def test_checkpoint_missing_a_tensor(saved, tmp_path):
    hf, _, _ = saved
    params = jaxeval.load_model(hf, dtype="float32", load_tokenizer=False).module.params()
    del params["layers"]["w_up"]
    save_checkpoint(tmp_path, params, json.loads((hf / "config.json").read_text()), "float32")
    with pytest.raises(CheckpointError, match=r"tensor \['layers'\]\['w_up'\] is missing"):
        jaxeval.load_model(tmp_path, dtype="float32", load_tokenizer=False)
