"""A real Q4 model against its dequantized float copy on LongBench: `jaxeval run` twice (the SmolLM2-135M
Q4_1 GGUF kept in its block codes, and the same file with --dequantize true), then
`jaxeval report Q4 --reference DEQUANTIZED`, the paired per-sample delta report.

The kept-quantized weights rebuild every element of the dequantized ones exactly (test_gguf_weights.py)
and read the same log-prob at every position (perf/quantized_read.py), so greedy generation must give
the same text on every sample and the report a delta of 0.00 in every group; the check reads the
deltas from the report's page and recomputes them from the two samples files.

A few datasets of the embedded sample, 2 records each, 16 new tokens: about 3 minutes on 2 CPU cores.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from jaxeval.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from html_tables import parse_tables  # noqa: E402

pytestmark = pytest.mark.realweights

DATASETS = ("hotpotqa", "trec")
FLAGS = ["--tasks", "longbench", "--longbench_datasets", ",".join(DATASETS), "--limit", "2", "--log_samples",
         "--gen_kwargs", "max_gen_toks=16"]


def _samples(folder) -> dict[str, dict]:
    (path,) = folder.glob("*.samples_longbench.jsonl")
    return {"/".join(map(str, row["key"])): row for row in map(json.loads, path.read_text().splitlines())}


def test_q4_gguf_against_its_dequantized_copy_on_longbench(builder, tmp_path, monkeypatch, capsys, report):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = builder.MODELS["smollm2-135m"]
    try:
        (gguf,) = builder.gguf_parts(model)
    except builder.MissingPackageError as error:
        pytest.skip(str(error))
    assert main(["run", "--model", str(gguf), *FLAGS, "--dequantize", "true", "--output_path", str(tmp_path / "deq")]) == 0
    assert main(["run", "--model", str(gguf), *FLAGS, "--output_path", str(tmp_path / "q4")]) == 0
    (reference,), (modified,) = (tmp_path / "deq").glob("*.json"), (tmp_path / "q4").glob("*.json")
    assert json.loads(modified.read_text())["model"]["quantization"] == "gguf-blocks"
    assert json.loads(reference.read_text())["model"]["quantization"] is None
    capsys.readouterr()
    assert main(["report", str(modified), "--reference", str(reference), "--out", str(tmp_path / "page")]) == 0
    printed = capsys.readouterr().out
    assert '"gguf-blocks"' in printed and "dequantize" in printed  # the settings that differ: the modification

    ref, mod = _samples(tmp_path / "deq"), _samples(tmp_path / "q4")
    assert sorted(ref) == sorted(mod) and len(ref) == 2 * len(DATASETS)
    differing = [key for key in ref if ref[key]["raw_output"] != mod[key]["raw_output"]]
    assert not differing, f"Q4 kept in its codes generates other text than its dequantized copy at {differing}"
    rows = parse_tables((tmp_path / "page" / "index.html").read_text())["longbench: paired per-sample deltas per group"]
    by_group = {row[0]: row for row in rows[1:]}
    for group, keys in [("all samples", list(ref)), *[(d, [k for k in ref if ref[k]["dataset"] == d]) for d in DATASETS]]:
        delta = sum(100 * (mod[k]["score"] - ref[k]["score"]) for k in keys) / len(keys)
        assert by_group[group][1] == str(len(keys)) and by_group[group][4] == f"{delta:.2f}", by_group[group]
    report(kind="delta", model="smollm2-135m", comparison="Q4_1 kept in codes vs dequantized float32",
           benchmark=f"longbench {','.join(DATASETS)} (2 each, 16 new tokens)",
           groups={group: {"paired": int(row[1]), "reference": row[2], "modified": row[3], "delta": row[4],
                           "ci": row[5]} for group, row in by_group.items()},
           identical_outputs=len(ref) - len(differing), samples=len(ref))
