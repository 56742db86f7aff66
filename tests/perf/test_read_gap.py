"""perf/read_gap.py: the four sides it times (both reads, both attentions) are what they claim to be."""

import json
import subprocess
import sys

import numpy as np
import pytest
from perf_scripts import ROOT, load_script


def load_profile():
    return load_script("attention_profile")


def test_the_attention_sides_compute_the_same_attention_at_a_gqa_shape():
    pytest.importorskip("torch")
    # SmolLM2's grouping (9 query heads over 3 KV heads), a 256-token chunk against a 768-token read
    sides = load_profile().attention_sides(768, heads=9, kv_heads=3, head_dim=64, chunk=256)
    assert set(sides) == {"jaxeval", "torch"}
    ours = np.concatenate([np.asarray(x) for x in sides["jaxeval"]()], axis=1)  # [1, T, H, hd]
    theirs = sides["torch"]().transpose(0, 2, 1, 3)  # SDPA's [1, H, T, hd]
    assert ours.shape == theirs.shape == (1, 768, 9, 64)
    np.testing.assert_allclose(ours, theirs, atol=2e-5, rtol=0)


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
    assert set(report["wall_s"]) == {"jaxeval read", "transformers read", "jaxeval attention", "torch attention"}
    assert all(v > 0 for v in report["wall_s"].values())
    assert report["ratio_wall"]["read"] == pytest.approx(report["wall_s"]["jaxeval read"]
                                                        / report["wall_s"]["transformers read"])
