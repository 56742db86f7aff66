"""EasyDeL checkpoints through the built-in `easydel` mapping: jaxeval's read equals EasyDeL's own float32
forward on the checkpoint it saved (rotary table kept in float32: shared/specs/easydel_reference.md).

The fixtures come from EasyDeL itself, in its own virtualenv (scripts/easydel_fixtures.py); the tier is
marked `easydel` and skipped where they are absent:  JAXEVAL_EASYDEL_FIXTURES=/work/easydel_fixtures
python -m pytest -m easydel tests/weights/test_easydel.py
"""

import os
from pathlib import Path

import numpy as np
import pytest

import jaxeval
from jaxeval.errors import CheckpointError

FIXTURES = Path(os.environ.get("JAXEVAL_EASYDEL_FIXTURES", "/work/easydel_fixtures"))
pytestmark = pytest.mark.easydel


@pytest.mark.parametrize("name", ["llama", "qwen3"])
def test_easydel_checkpoint_reads_as_easydel_computes(name):
    folder = FIXTURES / name
    if not (folder / "reference.npz").is_file():
        pytest.skip(f"no EasyDeL fixture at {folder} (scripts/easydel_fixtures.py writes it)")
    reference = np.load(folder / "reference.npz")
    ids, positions = reference["ids"], reference["positions"]
    model = jaxeval.load_model(folder, "float32", mapping="easydel", load_tokenizer=False)
    got = model.read(ids, positions, ids[positions]).logprobs
    np.testing.assert_allclose(got, reference["logprobs"], atol=1e-5, rtol=0)


def test_easydel_leaf_of_the_wrong_shape_is_named(tmp_path):
    folder = FIXTURES / "llama"
    if not (folder / "tensorstore_index.json").is_file():
        pytest.skip(f"no EasyDeL fixture at {folder}")
    import json
    import shutil

    copy = tmp_path / "llama"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "intermediate_size": 128}))
    with pytest.raises(CheckpointError, match=r"model/layers/0/mlp/gate_proj/kernel \(for layers/w_gate\): has "
                                              r"shape \[64, 96\], expected \[64, 128\]"):
        jaxeval.load_model(copy, "float32", mapping="easydel", load_tokenizer=False)
