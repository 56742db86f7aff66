"""The embedded sample is what scripts/build_longbench_sample.py writes (deterministic)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jaxeval.benchmarks.longbench.tasks import SHIPPED_SAMPLE
from longbench_helpers import REPO

TEXT_DIR = Path(__file__).resolve().parents[4] / "shared" / "data" / "text"  # ../shared of the checkout


@pytest.mark.skipif(not (TEXT_DIR / "wikitext2_valid.txt").is_file(), reason="source texts not available")
def test_builder_reproduces_the_shipped_sample(tmp_path):
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_longbench_sample.py"), "--text_dir",
                    str(TEXT_DIR), "--out", str(tmp_path)], check=True, capture_output=True)
    built = sorted(path.name for path in tmp_path.glob("*.jsonl"))
    assert built == sorted(path.name for path in SHIPPED_SAMPLE.glob("*.jsonl"))
    for name in built:
        assert (tmp_path / name).read_bytes() == (SHIPPED_SAMPLE / name).read_bytes(), name
