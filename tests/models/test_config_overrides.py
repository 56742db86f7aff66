"""load_model(path, **config_overrides) and the CLI loader: config.json fields replaced at load time."""

from __future__ import annotations


import numpy as np
import pytest

import jaxeval
from jaxeval.cli import _load
from jaxeval.options.model import ModelOptions
from jaxeval.errors import ConfigError

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


def test_load_model_applies_and_records_overrides(tiny_llama_writer, tmp_path):
    folder = tiny_llama_writer(tmp_path / "m")
    plain = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False)
    model = jaxeval.load_model(folder, dtype="float32", load_tokenizer=False,
                               rope_scaling={**YARN, "original_max_position_embeddings": 64},
                               max_position_embeddings=256)
    assert plain.config.rope.kind == "default" and plain.config.max_position_embeddings == 64
    assert model.config.rope.kind == "yarn" and model.config.rope.theta == plain.config.rope.theta
    assert model.config.max_position_embeddings == 256 and model.config_overrides["max_position_embeddings"] == 256
    ids = np.arange(3, 203) % 60 + 3  # 200 tokens: past the original 64, within the new 256
    a = model.read(ids, np.arange(100, 200), ids[100:200]).logprobs
    b = plain.read(ids[:64], np.arange(1, 64), ids[1:64]).logprobs
    assert a.shape == (100,) and np.isfinite(a).all() and np.isfinite(b).all()
    with pytest.raises(ConfigError, match="load_model: 'attn_implementation' is not a config.json field"):
        jaxeval.load_model(folder, dtype="float32", attn_implementation="eager")
    with pytest.raises(ConfigError, match="with overrides of rope_scaling: field 'rope_scaling' has "
                                          "rope_type='nope'"):
        jaxeval.load_model(folder, dtype="float32", rope_scaling={"rope_type": "nope"})


def test_the_cli_loader_passes_the_overrides(tiny_llama_writer, tmp_path):
    folder = tiny_llama_writer(tmp_path / "m")
    options = ModelOptions(model=str(folder), dtype="float32", config_overrides={"max_position_embeddings": 512})
    model = _load(options)
    assert model.config.max_position_embeddings == 512 and model.config_overrides == {"max_position_embeddings": 512}
