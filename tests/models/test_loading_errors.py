"""Bad model folders and bad read() arguments: each fails with a JaxevalError (ValueError for read
arguments, which are programming errors) whose message names the file, field or tensor involved."""

from __future__ import annotations

import contextlib
import json
import os
import struct

import numpy as np
import pytest

import jaxeval
from jaxeval.errors import CheckpointError, ConfigError, InputTooLongError, JaxevalError


@contextlib.contextmanager
def raises(exc_type, *fragments):
    """pytest.raises that also checks the message contains every fragment (and the JaxevalError base)."""
    with pytest.raises(exc_type) as info:
        yield info
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in error message: {message}"
    if exc_type is not ValueError:
        assert isinstance(info.value, JaxevalError)


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    for key, value in changes.items():
        if value is ...:
            config.pop(key, None)
        else:
            config[key] = value
    (folder / "config.json").write_text(json.dumps(config))
    return folder


# ---- the folder ------------------------------------------------------------------------------

def test_missing_folder(tmp_path):
    with raises(CheckpointError, str(tmp_path / "nope"), "not a model folder"):
        jaxeval.load_model(tmp_path / "nope")


def test_a_file_is_not_a_folder(tiny_llama_folder):
    folder = tiny_llama_folder()
    with raises(CheckpointError, "config.json", "not a model folder"):
        jaxeval.load_model(folder / "config.json")


def test_folder_without_config(tiny_llama_folder):
    folder = tiny_llama_folder()
    (folder / "config.json").unlink()
    with raises(ConfigError, str(folder / "config.json"), "no config.json"):
        jaxeval.load_model(folder)


def test_folder_without_weights(tiny_llama_folder):
    folder = tiny_llama_folder()
    (folder / "model.safetensors").unlink()
    with raises(CheckpointError, str(folder), "no model.safetensors"):
        jaxeval.load_model(folder)


def test_bad_load_arguments(tiny_llama_folder):
    folder = tiny_llama_folder()
    with raises(ConfigError, "dtype='float16'", "float32", "bfloat16"):
        jaxeval.load_model(folder, dtype="float16")
    with raises(ConfigError, "attention='flash'", "chunked", "xla"):
        jaxeval.load_model(folder, attention="flash")


# ---- config.json -----------------------------------------------------------------------------

@pytest.mark.parametrize("text, fragment", [
    ("{\"model_type\": \"llama\",", "not valid JSON"),
    ("", "not valid JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
])
def test_garbled_config(tiny_llama_folder, text, fragment):
    folder = tiny_llama_folder()
    (folder / "config.json").write_text(text)
    with raises(ConfigError, str(folder / "config.json"), fragment):
        jaxeval.load_model(folder)


@pytest.mark.parametrize("model_type", ["bert", None])
def test_unknown_model_type(tiny_llama_folder, model_type):
    folder = edit_config(tiny_llama_folder(), model_type=model_type if model_type else ...)
    with raises(ConfigError, str(folder / "config.json"), f"model_type={model_type!r}", "not supported", "llama"):
        jaxeval.load_model(folder)


@pytest.mark.parametrize("changes, fragments", [
    ({"rope_parameters": {"rope_type": "proportional", "factor": 4.0, "rope_theta": 1e4}},
     ["'rope_parameters'", "rope_type='proportional'", "not support"]),
    ({"rope_parameters": ..., "rope_theta": 1e4, "rope_scaling": {"type": "su", "factor": 2.0}},  # v4 layout
     ["'rope_scaling'", "rope_type='su'"]),
    ({"rope_parameters": {"rope_type": "linear", "rope_theta": 1e4}}, ["'rope_parameters'", "missing 'factor'"]),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}},
     ["partial_rotary_factor'=0.5 is not supported for model_type='llama'"]),
    ({"mlp_bias": True}, ["'mlp_bias'=True", "not supported"]),
    ({"attention_bias": True}, ["'attention_bias'=True", "not supported"]),
    ({"pretraining_tp": 2}, ["'pretraining_tp'=2"]),
    ({"hidden_act": "relu"}, ["'hidden_act'='relu'", "not supported"]),
    ({"layer_types": ["full_attention", "chunked_attention"]}, ["'layer_types'", "'chunked_attention'"]),
    ({"layer_types": ["full_attention"]}, ["'layer_types'", "1 entries", "num_hidden_layers=2"]),
    ({"layer_types": ["sliding_attention"] * 2}, ["sliding layers", "'sliding_window'"]),
    ({"hidden_size": ...}, ["'hidden_size' is missing"]),
    ({"vocab_size": None}, ["'vocab_size' is missing"]),
    ({"num_hidden_layers": "2"}, ["'num_hidden_layers'='2'", "positive integer"]),
    ({"intermediate_size": 0}, ["'intermediate_size'=0", "positive integer"]),
    ({"num_key_value_heads": 3}, ["'num_attention_heads'=4", "'num_key_value_heads'=3"]),
    ({"rms_norm_eps": "tiny"}, ["'rms_norm_eps'='tiny'", "number"]),
])
def test_unsupported_or_malformed_config(tiny_llama_folder, changes, fragments):
    folder = edit_config(tiny_llama_folder(), **changes)
    with raises(ConfigError, str(folder / "config.json"), *fragments):
        jaxeval.load_model(folder)


# ---- safetensors -----------------------------------------------------------------------------

def _rewrite(file, data: bytes):
    file.write_bytes(data)


def _header_bytes(file) -> tuple[bytes, bytes]:
    data = file.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return data[8:8 + n], data[8 + n:]


def _with_header(file, header: bytes, body: bytes = b""):
    file.write_bytes(struct.pack("<Q", len(header)) + header + body)


@pytest.mark.parametrize("corrupt, fragments", [
    (lambda f: _rewrite(f, f.read_bytes()[:-1000]), ["past the file end"]),  # cut inside the tensor data
    (lambda f: _rewrite(f, f.read_bytes()[:100]), ["truncated safetensors file", "header of"]),  # inside header
    (lambda f: _rewrite(f, f.read_bytes()[:5]), ["truncated safetensors file (no header)"]),
    (lambda f: _rewrite(f, b""), ["truncated safetensors file (no header)"]),
    (lambda f: _rewrite(f, os.urandom(4096)), ["not a safetensors file"]),
    (lambda f: _with_header(f, b"\x00garbled{" * 5), ["cannot read safetensors header"]),
    (lambda f: _with_header(f, b"[1, 2, 3]"), ["not a safetensors file", "not a JSON object"]),
    (lambda f: _with_header(f, json.dumps({"model.embed_tokens.weight": {"dtype": "F32", "shape": [64, 32]}})
                            .encode(), b"\0" * 8192), ["'model.embed_tokens.weight'", "malformed header entry"]),
    (lambda f: _with_header(f, json.dumps({"model.embed_tokens.weight": {
        "dtype": "F32", "shape": [64, 32], "data_offsets": [0, 100]}}).encode(), b"\0" * 8192),
     ["'model.embed_tokens.weight'", "25 elements for shape [64, 32]"]),
    (lambda f: _with_header(f, json.dumps({"model.embed_tokens.weight": {
        "dtype": "Q4_K", "shape": [64, 32], "data_offsets": [0, 8192]}}).encode(), b"\0" * 8192),
     ["'model.embed_tokens.weight'", "unsupported dtype Q4_K"]),
])
def test_garbled_safetensors(tiny_llama_folder, corrupt, fragments):
    folder = tiny_llama_folder()
    corrupt(folder / "model.safetensors")
    with raises(CheckpointError, str(folder / "model.safetensors"), *fragments):
        jaxeval.load_model(folder)


def test_header_data_offsets_are_checked_against_the_file(tiny_llama_folder):
    folder = tiny_llama_folder()
    header, body = _header_bytes(folder / "model.safetensors")
    meta = json.loads(header)
    meta["model.norm.weight"]["data_offsets"] = [0, len(body) + 4]
    _with_header(folder / "model.safetensors", json.dumps(meta).encode(), body)
    with raises(CheckpointError, "'model.norm.weight'", "past the file end"):
        jaxeval.load_model(folder)


@pytest.mark.parametrize("name", ["model.layers.1.mlp.up_proj.weight", "model.layers.0.input_layernorm.weight",
                                  "model.norm.weight", "lm_head.weight"])
def test_missing_tensor(tiny_llama_folder, name):
    folder = tiny_llama_folder(tensors_edit=lambda t: t.pop(name))
    with raises(CheckpointError, str(folder), repr(name), "missing"):
        jaxeval.load_model(folder)


def test_missing_embedding(tiny_llama_folder):
    folder = tiny_llama_folder(tensors_edit=lambda t: t.pop("model.embed_tokens.weight"))
    with raises(CheckpointError, str(folder), "embed_tokens.weight"):
        jaxeval.load_model(folder)


def test_wrong_tensor_shape(tiny_llama_folder):
    def edit(t):
        t["model.layers.1.self_attn.k_proj.weight"] = np.zeros((24, 32), np.float32)
    folder = tiny_llama_folder(tensors_edit=edit)
    with raises(CheckpointError, "'model.layers.1.self_attn.k_proj.weight'", "[24, 32]", "[16, 32]"):
        jaxeval.load_model(folder)


def test_config_disagreeing_with_weights(tiny_llama_folder):
    folder = edit_config(tiny_llama_folder(), intermediate_size=40)
    with raises(CheckpointError, "'model.layers.0.mlp.gate_proj.weight'", "[48, 32]", "[40, 32]"):
        jaxeval.load_model(folder)


def test_sharded_index_problems(tiny_llama_folder):
    folder = tiny_llama_folder()
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    index = folder / "model.safetensors.index.json"
    weight_map = {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                  "model.norm.weight": "model-00002-of-00002.safetensors"}
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    with raises(CheckpointError, "model-00002-of-00002.safetensors", "missing"):
        jaxeval.load_model(folder)
    index.write_text("{\"weight_map\": ")
    with raises(CheckpointError, str(index), "malformed index"):
        jaxeval.load_model(folder)
    index.write_text(json.dumps({"weight_map": ["model-00001-of-00002.safetensors"]}))
    with raises(CheckpointError, str(index), "malformed index"):
        jaxeval.load_model(folder)


# ---- read() arguments ------------------------------------------------------------------------

@pytest.fixture
def tiny_model(tiny_llama_folder):
    return jaxeval.load_model(tiny_llama_folder(), dtype="float32")  # vocab 64, max_position_embeddings 64


@pytest.mark.parametrize("positions, fragment", [
    ([0, 3], "position 0 is outside [1, 10)"),
    ([3, 10], "position 10 is outside [1, 10)"),
    ([-2], "position -2 is outside [1, 10)"),
    ([], "positions must be a non-empty 1-D integer array"),
    ([1.5, 2.0], "positions must be a non-empty 1-D integer array"),
    ([[1, 2]], "positions must be a non-empty 1-D integer array"),
])
def test_read_positions_outside_range(tiny_model, positions, fragment):
    ids = np.arange(3, 13)
    tokens = np.zeros(np.shape(positions)[:1], np.int32)
    with raises(ValueError, "read:", fragment):
        tiny_model.read(ids, positions, tokens)


def test_read_token_ids_outside_vocab(tiny_model):
    ids, positions = np.arange(3, 13), np.array([1, 5])
    with raises(ValueError, "tokens", "token id 64", "outside the vocabulary [0, 64)"):
        tiny_model.read(ids, positions, [3, 64])
    with raises(ValueError, "tokens", "token id -1"):
        tiny_model.read(ids, positions, [[3, 4], [-1, 5]])
    bad_ids = ids.copy()
    bad_ids[7] = 1000
    with raises(ValueError, "ids", "token id 1000", "outside the vocabulary [0, 64)"):
        tiny_model.read(bad_ids, positions, [3, 4])


def test_read_malformed_arguments(tiny_model):
    ids = np.arange(3, 13)
    with raises(ValueError, "ids must be a 1-D integer array"):
        tiny_model.read(ids[None], [1], [3])
    with raises(ValueError, "ids must be a 1-D integer array"):
        tiny_model.read(ids[:1], [1], [3])
    with raises(ValueError, "ids must be a 1-D integer array"):
        tiny_model.read(ids.astype(np.float32), [1], [3])
    with raises(ValueError, "tokens must be an integer [K] or [K, C] array with K=2", "(3,)"):
        tiny_model.read(ids, [1, 2], [3, 4, 5])
    with raises(ValueError, "tokens must be an integer [K] or [K, C] array with K=2", "float"):
        tiny_model.read(ids, [1, 2], [3.0, 4.5])
    with raises(ValueError, "tokens must be an integer [K] or [K, C] array with K=2", "(2, 1, 1)"):
        tiny_model.read(ids, [1, 2], [[[3]], [[4]]])


def test_input_too_long(tiny_model):
    assert tiny_model.max_length == 65
    ids = np.arange(100) % 60
    with raises(InputTooLongError, "99 input tokens", "max_position_embeddings=64"):
        tiny_model.read(ids, [5, 99], [1, 2])
    with raises(InputTooLongError, "65 input tokens"):
        tiny_model.read(ids[:66], [65], [1])
    # the longest text that fits: 65 tokens, the last one only predicted (position 64)
    result = tiny_model.read(ids[:65], [1, 64], [ids[1], ids[64]])
    assert result.logprobs.shape == (2,) and np.all(np.isfinite(result.logprobs)) and np.all(result.logprobs < 0)
    # a longer text is fine as long as no read position needs more than max_position_embeddings inputs
    again = tiny_model.read(ids, [1, 64], [ids[1], ids[64]])
    np.testing.assert_array_equal(again.logprobs, result.logprobs)
