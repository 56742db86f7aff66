"""perf/read_gap.py: its four sides are what they claim to be. Both "without attention" sides compute the
same function (each layer's attention output replaced by its queries), so they agree with each other and
differ from the reads, which agree with each other too."""

import json
import subprocess
import sys

import numpy as np
import pytest
from perf_scripts import ROOT, load_script


def logprobs_of(ours, theirs, use, ids, attention: bool) -> tuple[np.ndarray, np.ndarray]:
    import torch

    use(attention)
    positions = np.arange(1, len(ids))
    mine = np.asarray(ours.model.read(ids, positions, ids[positions]).logprobs)
    with torch.no_grad():
        logits = theirs.model(torch.from_numpy(ids).long()[None]).logits[0, :-1].float()
    use(True)
    picked = torch.log_softmax(logits, -1).gather(-1, torch.from_numpy(ids[1:]).long()[:, None])[:, 0]
    return mine, picked.numpy()


@pytest.fixture
def no_attention_registered():
    """perf/read_gap.py adds a "none" backend to the attention registry: taken out again after the test, so
    no other test in this process sees it among the backends."""
    from jaxeval.models.attention import REGISTRY

    yield
    REGISTRY.pop("none", None)


def test_the_sides_with_and_without_attention_agree_across_libraries(no_attention_registered):
    pytest.importorskip("torch")
    from jaxeval.bench.shapes import shape_folder
    from jaxeval.bench.worker import random_ids

    ours, theirs, use, fns = load_script("read_gap").sides(shape_folder("tiny-llama"), 128)
    assert set(fns) == {"jaxeval read", "jaxeval without attention", "transformers read",
                        "transformers without attention"}
    ids = random_ids(384, ours.model.config.vocab_size)
    with_attention = logprobs_of(ours, theirs, use, ids, attention=True)
    without = logprobs_of(ours, theirs, use, ids, attention=False)
    np.testing.assert_allclose(*with_attention, atol=1e-4, rtol=0)
    np.testing.assert_allclose(*without, atol=1e-4, rtol=0)
    assert np.abs(with_attention[0] - without[0]).max() > 1e-2  # "none" really replaced the attention
    assert ours.model.runtime.attention == "chunked"  # the read's own runtime is put back


def test_a_model_folder_without_config_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "perf" / "read_gap.py"), str(tmp_path / "missing")],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode != 0
    assert "neither a named shape" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_the_tiny_model_is_timed_on_every_side(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "gap.json"
    subprocess.run([sys.executable, str(ROOT / "perf" / "read_gap.py"), "tiny-llama", "--tokens", "512",
                    "--rounds", "1", "--prefill_chunk", "256", "--out", str(out)], check=True, cwd=ROOT,
                   capture_output=True)
    report = json.loads(out.read_text())
    wall = report["wall_s"]
    assert set(wall) == {"jaxeval read", "jaxeval without attention", "transformers read",
                         "transformers without attention"}
    assert all(v > 0 for v in wall.values())
    assert report["wall"]["ratio"]["read"] == pytest.approx(wall["jaxeval read"] / wall["transformers read"])
    assert report["wall"]["attention_s"]["jaxeval"] == pytest.approx(wall["jaxeval read"]
                                                                      - wall["jaxeval without attention"])
