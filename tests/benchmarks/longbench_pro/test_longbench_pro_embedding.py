"""SemSim embeddings: jaxeval's Qwen3 embedding path equals sentence-transformers on a tiny random
Qwen3 embedding model, and sentence-transformers folders are read (or refused) correctly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxeval.benchmarks.longbench_pro.semsim import EmbeddingSimilarity, SemSimSettings, cosine_matrix, load_semsim
from jaxeval.errors import CheckpointError, ConfigError
from jaxeval.models.sentence_config import read_sentence_config

TEXTS = ["the cat sat on the mat.", "hello", "北京是中国的首都，有很多名胜古迹。", "[answer] a much longer text " * 12]


def _folder(tmp_path, pooling: dict, prompts=None):
    (tmp_path / "1_Pooling").mkdir(parents=True)
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (tmp_path / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts or {}}))
    return tmp_path


def test_sentence_config_layouts_and_refusals(tmp_path):
    config = read_sentence_config(_folder(tmp_path / "a", {"pooling_mode": "lasttoken"}, {"query": "Q:"}))
    assert (config.normalize, config.prompts, config.max_seq_length) == (False, {"query": "Q:"}, None)
    with pytest.raises(ConfigError, match="pooling_mode_mean_tokens"):
        read_sentence_config(_folder(tmp_path / "b", {"pooling_mode_mean_tokens": True}))
    with pytest.raises(CheckpointError, match="modules.json"):
        read_sentence_config(tmp_path)


def test_cosine_matrix_is_plain_float32_cosine():
    a = np.array([[3.0, 4.0], [1.0, 0.0]], np.float32)
    b = np.array([[6.0, 8.0]], np.float32)
    assert cosine_matrix(a, b).dtype == np.float32
    assert cosine_matrix(a, b)[:, 0] == pytest.approx([1.0, 0.6])


def test_missing_model_is_a_recorded_deviation(tmp_path):
    similarity, description = load_semsim(SemSimSettings(model=str(tmp_path / "absent")))
    assert similarity is None and "not found locally" in description["deviation"]


@pytest.mark.slow
def test_jax_path_equals_sentence_transformers(tmp_path):
    pytest.importorskip("torch")
    st_module = pytest.importorskip("sentence_transformers")
    from embedding_helpers import QUERY_PROMPT, build_tiny_qwen3_embedding
    from jaxeval.embedding import DecoderEmbedder

    folder = build_tiny_qwen3_embedding(tmp_path / "tiny")
    reference = st_module.SentenceTransformer(str(folder), device="cpu", tokenizer_kwargs={"padding_side": "left"})
    ours = DecoderEmbedder(folder)
    assert ours.prompt_text("query") == QUERY_PROMPT
    np.testing.assert_allclose(ours.encode(TEXTS), reference.encode(TEXTS), atol=2e-6)  # 4th is truncated to 48
    np.testing.assert_allclose(ours.encode(TEXTS, prompt_name="query"),
                               reference.encode(TEXTS, prompt_name="query"), atol=2e-6)
    # the official SemSim: references as one batch, the prediction alone, model.similarity, max
    expected = float(reference.similarity(reference.encode(TEXTS[:3]), reference.encode([TEXTS[3]])).max())
    similarity, description = load_semsim(SemSimSettings(model=str(folder)))
    assert "not comparable" in description["deviation"]
    assert similarity.max_similarity(TEXTS[:3], TEXTS[3]) == pytest.approx(expected, abs=2e-6)
    backend, _ = load_semsim(SemSimSettings(model=str(folder), backend="sentence-transformers"))
    assert isinstance(backend, EmbeddingSimilarity)
    assert backend.max_similarity(TEXTS[:3], TEXTS[3]) == pytest.approx(expected, abs=1e-6)
