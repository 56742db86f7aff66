"""The embedded LongBench and HELMET samples are clean text: no WikiText `<unk>` markers, which real
tokenizers (Gemma 3's among them) read as a special token."""

from pathlib import Path

import pytest

ASSETS = Path(__file__).resolve().parents[2] / "jaxeval" / "assets"


@pytest.mark.parametrize("sample", ["longbench_sample", "helmet_sample"])
def test_no_unk_markers(sample):
    files = [p for p in (ASSETS / sample).rglob("*") if p.suffix in (".jsonl", ".json")]
    assert files
    dirty = [str(p.relative_to(ASSETS)) for p in files if "<unk>" in p.read_text(encoding="utf-8")]
    assert not dirty, f"<unk> in {dirty}"
