"""The prepared accelerator benchmark runs end to end at toy shapes on CPU (--dry_run)."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "perf" / "gpu_read.py"


def test_gpu_read_dry_run_writes_its_figures(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu", OUT=str(tmp_path))
    out = subprocess.run([sys.executable, str(SCRIPT), "--dry_run", "--peak_tflops", "0.001"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_read.json").read_text())
    assert report["dry_run"] and report["dtype"] == "float32" and report["platform"] == "cpu"
    reads = {f"read_{n}_{a}" for n in (512, 1024) for a in ("chunked", "xla")}
    assert set(report["runs"]) == reads | {"agreement_512", "agreement_1024", "generate_batch1", "generate_batch8"}
    for key in reads:
        run = report["runs"][key]
        assert "error" not in run, run
        assert run["finite"] and run["seconds"] > 0 and run["tokens_per_s"] > 0
        assert run["mfu"] > 0 and run["model_flops"] > 0
    assert report["runs"]["read_512_chunked"]["timed_call_includes_compile"] is False
    agree = report["runs"]["agreement_1024"]["xla_vs_chunked"]  # two float32 backends: the same reads
    assert 0 <= agree["mean_abs"] <= agree["max_abs"] < 1e-4
    for batch in (1, 8):
        gen = report["runs"][f"generate_batch{batch}"]
        assert "error" not in gen, gen
        assert gen["new_tokens_per_s"] > 0 and gen["batch"] == batch and gen["new_tokens"] == 8
