"""The model identity a journal is keyed on: weights by content (copies alike, trained or edited
weights not), tokenizer and chat template apart; two models in folders of the same name get
runs of their own."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from jaxeval.weights.loader import fingerprint
from jaxeval.cli import EMBEDDED_MODEL, main
from jaxeval.fingerprint import EDGE_BYTES, WHOLE_FILE_BYTES, describe_difference, model_identity, weight_files


@pytest.fixture
def two_copies(tmp_path):
    """a/final and b/final: plain copies of the embedded model (new modification times)."""
    a, b = tmp_path / "a" / "final", tmp_path / "b" / "final"
    shutil.copytree(EMBEDDED_MODEL, a, copy_function=shutil.copyfile)
    shutil.copytree(EMBEDDED_MODEL, b, copy_function=shutil.copyfile)
    return a, b


def _flip_byte(path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        f.seek(offset)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_copies_are_the_same_model_whatever_their_times(two_copies):
    a, b = two_copies
    os.utime(b / "config.json", (1, 1))
    assert model_identity(a, "float32") == model_identity(b, "float32") == model_identity(EMBEDDED_MODEL, "float32")
    assert fingerprint(a, "float32") == fingerprint(b, "float32") != fingerprint(b, "bfloat16")


@pytest.mark.parametrize("which", ["large", "small"])
def test_changed_weights_are_another_model(two_copies, which):
    a, b = two_copies
    sizes = {path.relative_to(b): path.stat().st_size for path in weight_files(b)}
    large = [p for p, size in sizes.items() if size > WHOLE_FILE_BYTES]
    small = [p for p, size in sizes.items() if 1 << 20 < size <= WHOLE_FILE_BYTES]
    assert large and small  # the embedded checkpoint has both kinds of data file
    target = (large if which == "large" else small)[0]
    # large: a byte of the first sampled block past the head; small: one in the middle
    _flip_byte(b / target, EDGE_BYTES + 10 if which == "large" else sizes[target] // 2)
    there, now = model_identity(a, "float32"), model_identity(b, "float32")
    assert describe_difference(there, now) == "the model's weights (checkpoint files' content)"


def test_tokenizer_and_chat_template_are_parts_of_their_own(two_copies):
    a, b = two_copies
    config = json.loads((b / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ messages[0]['content'] }}"
    (b / "tokenizer_config.json").write_text(json.dumps(config))
    assert describe_difference(model_identity(a, "float32"), model_identity(b, "float32")) == "the chat template"
    with open(b / "tokenizer.json", "a") as f:
        f.write("\n")
    assert describe_difference(model_identity(a, "float32"), model_identity(b, "float32")) == \
        "the chat template and the tokenizer files"


def _retrained(source, target):
    """A copy of source whose every weight moved a little (as further training moves them)."""
    import jax
    import jax.numpy as jnp

    from jaxeval.weights.orbax import load_checkpoint_params, save_checkpoint
    from jaxeval.models.config import load_hf_config

    raw = json.loads((source / "config.json").read_text())
    params = load_checkpoint_params(source, load_hf_config(source), jnp.float32)
    moved = jax.tree.map(lambda w: w * 1.5, params)
    save_checkpoint(target, moved, raw, "float32", tokenizer_from=source)
    shutil.copy(source / "jaxeval.json", target / "jaxeval.json")


@pytest.mark.slow
def test_two_models_in_same_named_folders_into_one_output_path_get_their_own_scores(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    a, b = tmp_path / "a" / "final", tmp_path / "b" / "final"
    shutil.copytree(EMBEDDED_MODEL, a)
    _retrained(EMBEDDED_MODEL, b)
    out = tmp_path / "results"
    flags = ["run", "--tasks", "agent_bench", "--agent_bench_sets", "facts", "--limit", "2", "--output_path", str(out)]
    assert main([*flags, "--model", str(a)]) == 0
    assert main([*flags, "--model", str(b)]) == 0
    runs = [json.loads(path.read_text()) for path in sorted(out.glob("final-*.json"))]
    assert len(runs) == 2 and len(list(out.glob("*.journal.jsonl"))) == 2
    assert {run["model"]["fingerprint"] for run in runs} == {fingerprint(a, "float32"), fingerprint(b, "float32")}
    assert [run["timing"]["resumed_records"] for run in runs] == [0, 0]  # neither took the other's samples
    assert runs[0]["details"]["agent_bench"] != runs[1]["details"]["agent_bench"]
