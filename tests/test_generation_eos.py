"""EOS ids from generation_config.json (jaxeval.weights.loader.generation_eos_ids): one id or a list, as
transformers reads them; Model.eos_token_ids joins them with config.json's and the tokenizer's."""

from __future__ import annotations

import json
import types

import pytest

from jaxeval.api import Model
from jaxeval.weights.loader import generation_eos_ids
from jaxeval.errors import ConfigError


@pytest.mark.parametrize("value,ids", [(2, (2,)), ([128001, 128009], (128001, 128009)), (None, ())])
def test_generation_config_eos_ids(tmp_path, value, ids):
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": value, "temperature": 0.7}))
    assert generation_eos_ids(tmp_path) == ids


def test_no_generation_config_and_bad_values(tmp_path):
    assert generation_eos_ids(tmp_path) == ()
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": ["</s>"]}))
    with pytest.raises(ConfigError, match="generation_config.json: eos_token_id must be a token id or a list"):
        generation_eos_ids(tmp_path)


def test_model_eos_ids_join_every_source():
    fake = types.SimpleNamespace(config=types.SimpleNamespace(eos_token_ids=(1,)), generation_eos_ids=(7, 8),
                                 tokenizer=types.SimpleNamespace(eos_token_id=3))
    assert Model.eos_token_ids.fget(fake) == frozenset({1, 3, 7, 8})
