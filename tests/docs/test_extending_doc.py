"""docs/extending.md's benchmark, as written on the page: its code blocks run, registered with the
page's one registry line, through `jaxeval run` on the framework's sample loop (a stand-in model
that spells back the even-length words right: the page is about plumbing)."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

from jaxeval.benchmarks import registry
from jaxeval.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"


class ByteTokenizer:
    """One token per UTF-8 byte (ids 0-255); no chat template, no special tokens."""

    chat_template = None
    eos_token_id = None

    def __call__(self, text, add_special_tokens=True, truncation=False):
        return {"input_ids": list(text.encode("utf-8"))}

    def decode(self, ids, skip_special_tokens=True):
        return bytes(ids).decode("utf-8")


class StandInModel:
    path, dtype, fingerprint, attention = "stand-in", "float32", "d" * 16, "none"
    config = types.SimpleNamespace(model_type="stand-in")

    def __init__(self):
        self.stats = {"reads": 0, "tokens": 0}
        self.tokenizer = ByteTokenizer()
        self.prompts: list[str] = []

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):
        out = []
        for ids in prompts:
            word = re.fullmatch(r"Spell (\w+) backwards:", bytes(ids).decode()).group(1)
            self.prompts.append(word)
            answer = " " + (word[::-1] if len(word) % 2 == 0 else word)
            out.append(types.SimpleNamespace(tokens=list(answer.encode())[:max_new_tokens], finish_reason="stop"))
        return out


def test_the_pages_benchmark_runs_as_written(tmp_path, monkeypatch, capsys):
    from jaxeval import cli

    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    module = types.ModuleType("jaxeval.benchmarks.toy.benchmark")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(blocks[0] + blocks[1] + blocks[2], str(PAGE), "exec"), module.__dict__)
    assert 'BENCHMARK_MODULES = (\n    ...,\n    "jaxeval.benchmarks.toy.benchmark",\n)' in blocks[3]
    monkeypatch.setattr(registry, "BENCHMARK_MODULES", (*registry.BENCHMARK_MODULES, "jaxeval.benchmarks.toy.benchmark"))
    models = []
    monkeypatch.setattr(cli, "_load", lambda args: models.append(StandInModel()) or models[-1])
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    out = tmp_path / "results"
    flags = ["run", "--tasks", "toy", "--model", "stand-in", "--output_path", str(out), "--log_samples"]
    # cat, dog, bird, frog, lion (--limit 5 of the six): the even-length bird, frog and lion right
    assert main([*flags, "--limit", "5", "--batch_size", "2"]) == 0
    assert "toy mean 0.6000" in capsys.readouterr().out
    assert models[-1].prompts == ["cat", "dog", "bird", "frog", "lion"]
    (results,) = out.glob("*.json")
    data = json.loads(results.read_text())
    assert data["results"]["toy/main"]["mean"] == 0.6
    assert data["n-samples"]["toy/main"] == {"original": 6, "effective": 5}
    (samples,) = out.glob("*.samples_toy.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert [row["key"] for row in rows] == [f"toy/main/all/{i}/0" for i in range(5)]
    assert rows[2]["pred"] == " drib" and rows[2]["score"] == 1.0 and rows[2]["prompt_tokens"] == len("Spell bird backwards:")
    # the same run again resumes from its journal: the model is asked nothing
    assert main([*flags, "--limit", "5", "--batch_size", "2"]) == 0
    assert models[-1].prompts == [] and "toy mean 0.6000" in capsys.readouterr().out
    assert main([*flags, "--toy_max_new_tokens", "0"]) == 2
    assert capsys.readouterr().err.strip() == "jaxeval: error: --toy_max_new_tokens must be >= 1, got 0"
