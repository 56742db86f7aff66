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


@pytest.mark.long
@pytest.mark.parametrize("name", ["llama", "qwen3"])
def test_easydel_checkpoint_reads_equal_to_its_export_at_16k(name):
    """16,384 positions: the read through the easydel mapping equals the read of EasyDeL's own Hugging Face export
    of the same checkpoint (to_torch(), OUT/<name>_hf, scripts/easydel_fixtures.py), float32."""
    folder, export = FIXTURES / name, FIXTURES / f"{name}_hf"
    if not (export / "config.json").is_file():
        pytest.skip(f"no EasyDeL export at {export} (scripts/easydel_fixtures.py --export writes it)")
    seq = 16384
    ids = np.random.default_rng(1).integers(16, 4096, size=seq)
    positions = np.arange(1, seq)
    # the fixtures' config says 4,096 positions; plain RoPE reads on
    reads = [jaxeval.load_model(path, "float32", load_tokenizer=False, max_position_embeddings=seq, **kwargs)
             .read(ids, positions, ids[1:]).logprobs for path, kwargs in ((folder, {"mapping": "easydel"}), (export, {}))]
    delta = np.abs(np.asarray(reads[0], np.float64) - np.asarray(reads[1], np.float64)).max()
    print(f"{name}: max |d log p| over {seq - 1} positions = {delta:.2e}")
    assert delta <= 1e-5


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


def test_easydel_trainer_steps_score_through_the_series(tmp_path, capsys):
    """run-<step> folders (EasyDeL's Trainer) as a step series with --mapping easydel, on the command line."""
    import json
    import shutil

    from jaxeval.cli import EMBEDDED_MODEL, main

    folder = FIXTURES / "llama"
    if not (folder / "tensorstore_index.json").is_file():
        pytest.skip(f"no EasyDeL fixture at {folder}")
    run = tmp_path / "trainer"
    for step in (100, 200):
        shutil.copytree(folder, run / f"run-{step}")
        for name in ("tokenizer.json", "tokenizer_config.json"):  # EasyDeL saves no tokenizer: the user adds it
            shutil.copy(EMBEDDED_MODEL / name, run / f"run-{step}" / name)
    # the fixture's config says 4,096 positions; the sample's texts are 8k (plain RoPE reads on)
    assert main(["run", "--model", str(run), "--steps", "all", "--mapping", "easydel", "--tasks", "agent_bench",
                 "--model_args", "max_position_embeddings=16384",
                 "--limit", "1", "--agent_bench_sets", "facts", "--output_path", str(tmp_path / "out")]) == 0
    (series,) = (tmp_path / "out").glob("*.series.json")
    steps = json.loads(series.read_text())["steps"]
    assert list(steps) == ["100", "200"]
    assert steps["100"]["scores"] == steps["200"]["scores"]  # the same weights at both steps
