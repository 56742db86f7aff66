"""A new benchmark is one package plus one registry line: a toy benchmark defined here, registered
at test time, runs through `jaxeval run` end to end (flags, YAML keys, journal and resume,
results, `jaxeval ls`, `jaxeval validate`, its own view in `jaxeval report`), its samples on the
framework's sample loop. The model is a stand-in (no weights): what is tested is the plumbing, not
a model."""

from __future__ import annotations

import dataclasses
import json
import sys
import types

import pytest

from jaxeval.benchmarks import registry
from jaxeval.benchmarks.base import Benchmark, RunContext
from jaxeval.benchmarks.loop import Group, Sample, Task
from jaxeval.benchmarks.settings import setting
from jaxeval.cli import main
from jaxeval.errors import ConfigError
from jaxeval.report.data import BenchmarkView, Table

COMPUTED: list[int] = []  # item indices computed (not resumed), over the test


@dataclasses.dataclass(frozen=True)
class ToySettings:
    word: str = setting("abc", "the word whose letters are counted")
    scale: float = setting(1.0, "multiplies every score")
    shout: bool = setting(False, "upper-case the word first")
    notes: str | None = setting(None, "a file name that changes no number", hashed=False)


class ToyTask(Task):
    """Six samples on the framework's loop; none asks the model anything (request None)."""

    def __init__(self, ctx: RunContext, settings: ToySettings):
        self.ctx, self.settings = ctx, settings
        self.word = settings.word.upper() if settings.shout else settings.word

    def groups(self):
        return [Group("toy", [Sample(f"toy/main/all/{i}/0", i) for i in range(6)])]

    def request(self, sample):
        return None

    def score(self, sample, output):
        COMPUTED.append(sample.item)
        return {"score": self.settings.scale * (sample.item % len(self.word)) / len(self.word)}

    def summarize(self, done):
        records = done[0].records
        mean = sum(r["score"] for r in records) / len(records)
        return {"mean": mean, "word": self.word, "model": self.ctx.model.path}, f"toy mean {mean:.4f}"


class Toy(Benchmark):
    name = "toy"
    tasks = ("toy",)
    Settings = ToySettings

    def describe(self):
        return {"toy": {"about": "letters of a word", "configs": ["main"], "lengths": ["1"]}}

    def check(self, task, settings, ctx):
        if settings.scale <= 0:
            raise ConfigError(f"--toy_scale must be > 0, got {settings.scale}")

    def validate(self, task, settings):
        return [f"toy: the word {settings.word!r} is valid"]

    def samples(self, ctx: RunContext, settings: ToySettings):
        return ToyTask(ctx, settings)

    def summarize(self, task, result):
        return {"results": {"toy/main": {"mean": result["mean"]}}, "versions": self.version,
                "higher_is_better": {"toy/main": {"mean": True}}}

    def report_view(self, task):
        def view(pairs):
            out = BenchmarkView("toy")
            out.tables.append(Table("Toy words", ("run", "word"), tuple((label, s["word"]) for label, s in pairs)))
            return out
        return view


class StandInModel:
    path, dtype, fingerprint, attention, tokenizer = "stand-in", "float32", "e" * 16, "none", None
    config = types.SimpleNamespace(model_type="stand-in")

    def __init__(self):
        self.stats = {"reads": 0, "tokens": 0}


@pytest.fixture
def toy(monkeypatch):
    from jaxeval import cli

    module = types.ModuleType("toy_benchmark")
    module.BENCHMARK = Toy()
    monkeypatch.setitem(sys.modules, "toy_benchmark", module)
    monkeypatch.setattr(registry, "BENCHMARK_MODULES", (*registry.BENCHMARK_MODULES, "toy_benchmark"))  # the line
    monkeypatch.setattr(cli, "_load", lambda args: StandInModel())
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    COMPUTED.clear()


def test_a_toy_benchmark_runs_end_to_end(tmp_path, toy, capsys):
    out = tmp_path / "results"
    flags = ["--tasks", "toy", "--model", "stand-in", "--output_path", str(out), "--toy_word", "abcd"]
    assert main(["run", *flags, "--toy_scale", "2"]) == 0
    expected = sum(2.0 * (i % 4) / 4 for i in range(6)) / 6
    assert f"toy mean {expected:.4f}" in capsys.readouterr().out and COMPUTED == list(range(6))
    (results_file,) = out.glob("*.json")
    results = json.loads(results_file.read_text())
    assert results["results"]["toy/main"]["mean"] == expected and results["details"]["toy"]["word"] == "abcd"
    assert results["config"]["toy_word"] == "abcd" and results["config"]["toy_scale"] == 2.0
    assert not any(key.startswith(("helmet_", "agent_bench_", "longbench")) for key in results["config"])
    (journal,) = out.glob("*.journal.jsonl")
    assert len(journal.read_text().splitlines()) == 7  # header + 6 samples

    # the same settings from a run config YAML (and a setting that is not hashed): the same run, resumed
    config = tmp_path / "toy.yaml"
    config.write_text("tasks: toy\ntoy_word: abcd\ntoy_scale: 2\ntoy_notes: anything.txt\n")
    assert main(["run", "--config", str(config), "--model", "stand-in", "--output_path", str(out)]) == 0
    assert "6 samples already done" in capsys.readouterr().err and COMPUTED == list(range(6))
    assert [p.name for p in out.glob("*.json")] == [results_file.name]
    # its own setting renames the run; another benchmark's does not
    assert main(["run", *flags, "--toy_scale", "2", "--toy_shout", "--helmet_seed", "7"]) == 0
    assert len(list(out.glob("*.journal.jsonl"))) == 2 and "ABCD" in (out / next(
        p.name for p in out.glob("*.json") if p != results_file)).read_text()

    # the registry's other users: ls, validate, the settings checks, the report's view
    assert main(["ls"]) == 0 and "toy: letters of a word" in capsys.readouterr().out
    assert main(["validate", "--tasks", "toy", "--toy_word", "xyz"]) == 0
    assert "toy: the word 'xyz' is valid" in capsys.readouterr().out
    assert main(["run", *flags, "--toy_scale", "0"]) == 2
    assert capsys.readouterr().err.strip() == "jaxeval: error: --toy_scale must be > 0, got 0.0"
    assert main(["report", str(results_file), "--out", str(tmp_path / "report")]) == 0
    printed = capsys.readouterr().out
    assert "Toy words" in printed and "abcd" in printed


def test_settings_become_flags_with_their_help(toy, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "--toy_word TOY_WORD the word whose letters are counted" in shown
    assert "--toy_shout upper-case the word first" in shown
