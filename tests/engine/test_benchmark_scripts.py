"""The prepared accelerator benchmark runs end to end at toy shapes on CPU (--dry_run)."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_read.py"


def test_gpu_read_dry_run_writes_its_figures(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", OUT=str(tmp_path))
    out = subprocess.run([sys.executable, str(SCRIPT), "--dry_run", "--peak_tflops", "0.001"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_read.json").read_text())
    assert report["dry_run"] and report["dtype"] == "float32" and report["platform"] == "cpu"
    assert set(report["runs"]) == {"read_512_chunked", "read_1024_chunked"}
    for run in report["runs"].values():
        assert "error" not in run, run
        assert run["finite"] and run["seconds"] > 0 and run["tokens_per_s"] > 0
        assert run["mfu"] > 0 and run["model_flops"] > 0
    assert report["runs"]["read_512_chunked"]["timed_call_includes_compile"] is False


def test_read_flops_of_llama_8b():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from gpu_read import LLAMA_8B, read_flops
    finally:
        sys.path.pop(0)
    from jaxeval.models.config import config_from_hf

    c = config_from_hf(LLAMA_8B)
    # trunk of Llama-3-8B: 6.98e9 weights outside the embedding and head -> 2 FLOPs each per token
    assert abs(read_flops(c, 1, 0) - 2 * 6.98e9) / (2 * 6.98e9) < 0.01
    # causal attention: 2 * T^2 * 32 heads * 128 head_dim * 32 layers on top of T times the trunk
    attention = lambda t: 2 * t ** 2 * 32 * 128 * 32  # noqa: E731
    trunk = read_flops(c, 1, 0) - attention(1)
    assert read_flops(c, 32768, 0) == 32768 * trunk + attention(32768)
    assert read_flops(c, 2, 5) - read_flops(c, 2, 0) == 2 * 5 * 4096 * 128256  # the LM head at 5 read rows
