"""The reference workflow on real runs: the embedded model against itself quantized to int4
(`--quantize int4 --quant_group 32`), longctx-agent-bench facts and tool calls, one item each;
the page's paired numbers checked against both runs' samples files."""

from __future__ import annotations

import json

from jaxeval.cli import main
from html_tables import parse_tables

FLAGS = ["--tasks", "agent_bench", "--agent_bench_sets", "facts,tool_calls", "--limit", "1", "--log_samples"]


def _targets(folder) -> dict[str, float]:
    """key#target -> 1/0 from a samples file (aligned targets only), as the hook keys them."""
    (path,) = folder.glob("*.samples_agent_bench.jsonl")
    scores = {}
    for row in map(json.loads, path.read_text().splitlines()):
        targets = row.get("queries") or row.get("targets") or []
        for index, target in enumerate(targets):
            if target["aligned"]:
                right = target["recalled"] if row["config"] == "facts" else target["correct"]
                scores[f"{row['key']}#{target.get('target_index', index)}"] = float(right)
    return scores


def test_int4_against_the_original_on_the_embedded_model(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    assert main(["run", *FLAGS, "--output_path", str(tmp_path / "orig")]) == 0
    (reference,) = (tmp_path / "orig").glob("*.json")
    assert main(["run", *FLAGS, "--quantize", "int4", "--quant_group", "32", "--output_path", str(tmp_path / "int4"),
                 "--reference", str(reference)]) == 0
    (results,) = (tmp_path / "int4").glob("*.json")
    page = (tmp_path / "int4" / f"{results.stem}.vs-reference" / "index.html").read_text()
    tables = parse_tables(page)
    ref, mod = _targets(tmp_path / "orig"), _targets(tmp_path / "int4")
    shared = [key for key in ref if key in mod]
    delta = sum(mod[k] - ref[k] for k in shared) / len(shared)
    rows = tables["agent_bench: paired per-sample deltas per group"]
    assert rows[1][:2] == ["all samples", str(len(shared))] and rows[1][4] == f"{delta:.2f}"
    low, high = (float(v) for v in rows[1][5].strip("[]").split(", "))
    assert low <= round(delta, 2) <= high
    assert {row[0] for row in rows[2:]} <= {"facts", "tool_calls near", "tool_calls far"}
    assert ["quantize", '"none"', '"int4"'] in tables["What differs between the runs"]
    assert 'src="compare_agent_bench.png"' in page
