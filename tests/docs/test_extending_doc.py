"""docs/extending.md's benchmark, as written on the page: its code blocks run, registered with the
page's one registry line, through `jaxeval run` (a stand-in model: the page is about plumbing)."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

from jaxeval.benchmarks import registry
from jaxeval.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


class StandInModel:
    path, dtype, fingerprint, attention, tokenizer = "stand-in", "float32", "d" * 16, "none", None
    config = types.SimpleNamespace(model_type="stand-in")

    def __init__(self):
        self.stats = {"reads": 0, "tokens": 0}


def test_the_pages_benchmark_runs_as_written(tmp_path, monkeypatch, capsys):
    from jaxeval import cli

    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    module = types.ModuleType("jaxeval.benchmarks.toy.benchmark")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(blocks[0] + blocks[1], str(PAGE), "exec"), module.__dict__)
    assert 'BENCHMARK_MODULES = (\n    ...,\n    "jaxeval.benchmarks.toy.benchmark",\n)' in blocks[2]
    monkeypatch.setattr(registry, "BENCHMARK_MODULES", (*registry.BENCHMARK_MODULES, "jaxeval.benchmarks.toy.benchmark"))
    monkeypatch.setattr(cli, "_load", lambda args: StandInModel())
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    out = tmp_path / "results"
    assert main(["run", "--tasks", "toy", "--model", "stand-in", "--output_path", str(out), "--toy_word", "abcd",
                 "--limit", "5"]) == 0
    expected = sum(i % 4 / 4 for i in range(5)) / 5
    assert f"toy mean {expected:.4f}" in capsys.readouterr().out
    (results,) = out.glob("*.json")
    assert json.loads(results.read_text())["results"]["toy/main"]["mean"] == expected
    assert main(["run", "--tasks", "toy", "--model", "stand-in", "--output_path", str(out), "--toy_scale", "0"]) == 2
    assert capsys.readouterr().err.strip() == "jaxeval: error: --toy_scale must be > 0, got 0.0"
