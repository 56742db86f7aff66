"""lm-eval's run flags: --gen_kwargs (generation settings parsed as lm-eval writes them, applied
in every generation of a run through jaxeval.generation, never a judge's, recorded, hashed, named
in deviations) and --batch_size auto / auto:N (chosen from memory and the run's longest cache)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types

import pytest

from jaxeval.benchmarks import registry
from jaxeval.benchmarks.base import Benchmark
from jaxeval.cli import main
from jaxeval.errors import ConfigError
from jaxeval.generation import GenerationOptions, GenKwargs, generate, overriding
from jaxeval.run.config import config_hash, parse_gen_kwargs


def test_lm_eval_syntax_json_and_yaml_read_the_same():
    expected = GenKwargs(temperature=0.0, top_p=1.0, max_new_tokens=64, until=("\n",))
    assert parse_gen_kwargs('temperature=0,top_p=1,max_gen_toks=64,until=["\\n"]') == expected
    assert parse_gen_kwargs('{"temperature": 0, "top_p": 1, "max_new_tokens": 64, "until": ["\\n"]}') == expected
    assert parse_gen_kwargs({"temperature": 0, "top_p": 1, "max_gen_toks": 64, "until": "\n"}) == expected
    assert parse_gen_kwargs("do_sample=True,until=Answer:") == GenKwargs(do_sample=True, until=("Answer:",))
    assert parse_gen_kwargs(None) is None and parse_gen_kwargs(" ") is None
    assert expected.recorded() == {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 64, "until": ["\n"]}


@pytest.mark.parametrize("text, message", [
    ("temprature=0", "unknown key 'temprature'; known: temperature, top_p, do_sample, max_gen_toks"),
    ("max_gen_toks=0", "max_gen_toks=0 must be a positive integer"),
    ("max_gen_toks=8,max_new_tokens=9", "max_gen_toks=8 and max_new_tokens=9 differ"),
    ("top_p=1.5", "top_p=1.5 must be a number in (0, 1]"),
    ("temperature=hot", "temperature='hot' must be a number >= 0"),
    ("do_sample=maybe", "do_sample='maybe' must be true or false"),
    ("until=[1]", "until=[1] must be a string or a list of non-empty strings"),
    ("temperature", "'temperature' is not key=value"),
    ("{temperature: 0}", "not valid JSON"),
])
def test_bad_gen_kwargs_are_one_error_naming_them(text, message):
    with pytest.raises(ConfigError, match="--gen_kwargs: ") as error:
        parse_gen_kwargs(text)
    assert message in str(error.value)


def test_apply_replaces_the_benchmarks_settings():
    options = GenerationOptions(200, stop=("\n\n",), stop_token_ids=(0,), min_new_tokens=1, temperature=0.6, top_p=0.95)
    got = GenKwargs(max_new_tokens=16, until=("END",), top_p=0.5).apply(options)
    assert (got.max_new_tokens, got.stop, got.stop_token_ids, got.min_new_tokens, got.temperature, got.top_p) == \
        (16, ("END",), (0,), 1, 0.6, 0.5)
    assert GenKwargs(do_sample=False).apply(options).temperature == 0.0  # greedy
    assert GenKwargs(do_sample=True).apply(dataclasses.replace(options, temperature=0.0)).temperature == 1.0
    assert GenKwargs(do_sample=True).apply(options).temperature == 0.6


class RecordingModel:
    """A stand-in model whose generate() records what it was asked for."""

    path, dtype, fingerprint, attention, tokenizer = "stand-in", "float32", "e" * 16, "none", None
    config = types.SimpleNamespace(model_type="stand-in")

    def __init__(self):
        self.stats, self.calls = {"reads": 0, "tokens": 0}, []

    def generate(self, prompts, max_new_tokens, stop=None, temperature=0.0, top_p=1.0, seed=0, *,
                 stop_token_ids=None, min_new_tokens=0, batch_size=8):
        self.calls.append({"max_new_tokens": max_new_tokens, "stop": stop, "temperature": temperature, "top_p": top_p,
                           "batch_size": batch_size})
        return [types.SimpleNamespace(text="x", tokens=[1]) for _ in prompts]


def test_only_inside_overriding_and_never_for_a_judge():
    model, options = RecordingModel(), GenerationOptions(32, stop=("\n",))
    with overriding(GenKwargs(max_new_tokens=4, temperature=0.5)) as state:
        generate(model, [[1, 2]], options)
        generate(model, [[1, 2]], options, judge=True)
    generate(model, [[1, 2]], options)
    assert [(c["max_new_tokens"], c["temperature"]) for c in model.calls] == [(4, 0.5), (32, 0.0), (32, 0.0)]
    assert state.calls == 1


class Generating(Benchmark):
    name, tasks = "gen_toy", ("gen_toy",)

    @dataclasses.dataclass(frozen=True)
    class Settings:
        pass

    def run(self, ctx, settings):
        outputs = generate(ctx.model, [[1, 2, 3]], GenerationOptions(32, stop=("\n",)), batch_size=ctx.batch_size)
        return {"outputs": [o.text for o in outputs]}, "done"

    def summarize(self, task, result):
        return {"results": {"gen_toy/main": {"n": 1.0}}, "deviations": ["its own"]}


@pytest.fixture
def gen_toy(monkeypatch):
    from jaxeval import cli

    module = types.ModuleType("gen_toy_benchmark")
    module.BENCHMARK = Generating()
    monkeypatch.setitem(sys.modules, "gen_toy_benchmark", module)
    monkeypatch.setattr(registry, "BENCHMARK_MODULES", (*registry.BENCHMARK_MODULES, "gen_toy_benchmark"))
    model = RecordingModel()
    monkeypatch.setattr(cli, "_load", lambda args: model)
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    return model


def test_a_run_applies_records_hashes_and_names_them(tmp_path, gen_toy, capsys):
    flags = ["run", "--tasks", "gen_toy", "--model", "stand-in", "--output_path", str(tmp_path)]
    assert main([*flags, "--out", str(tmp_path / "plain.json")]) == 0
    assert main([*flags, "--out", str(tmp_path / "given.json"), "--gen_kwargs",
                 'max_gen_toks=5,until=["END"],temperature=0']) == 0
    assert [(c["max_new_tokens"], c["stop"]) for c in gen_toy.calls] == [(32, ["\n"]), (5, ["END"])]
    plain, given = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("plain", "given"))
    assert plain["config"]["gen_kwargs"] is None and plain["deviations"]["gen_toy"] == ["its own"]
    assert given["config"]["gen_kwargs"] == {"temperature": 0.0, "max_new_tokens": 5, "until": ["END"]}
    assert given["config_hash"] != plain["config_hash"]
    assert given["deviations"]["gen_toy"][0] == "its own" and "max_new_tokens=5" in given["deviations"]["gen_toy"][1]
    # runs without --gen_kwargs keep the hash they had before the flag existed
    without = {k: v for k, v in plain["config"].items() if k != "gen_kwargs"}
    assert config_hash(without) == config_hash(plain["config"])
    # the same settings spelled another way are the same run
    assert main([*flags, "--out", str(tmp_path / "again.json"), "--gen_kwargs",
                 '{"until": "END", "max_new_tokens": 5, "temperature": 0.0}']) == 0
    assert json.loads((tmp_path / "again.json").read_text())["config_hash"] == given["config_hash"]
    capsys.readouterr()
    assert main([*flags, "--gen_kwargs", "max_tokens=5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--gen_kwargs: unknown key 'max_tokens'" in err


def test_batch_size_flag_values():
    from jaxeval.options.run import parse_batch_size
    from jaxeval.plan.batch import auto_cap

    assert [parse_batch_size(v) for v in ("8", "auto", "auto:4")] == [8, "auto", "auto:4"]
    assert [auto_cap(8), auto_cap("auto"), auto_cap("auto:4")] == [None, 64, 4]
    assert parse_batch_size("0") == 0  # a number: the run's check says it must be positive
    for bad in ("auto:0", "auto:x", "big", "auto:"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"positive integer, auto or auto:N, got '{bad}'"):
            parse_batch_size(bad)


def test_prefill_activations_of_a_row_worked_example():
    """The Llama-3-8B shape, a 2,048-token bfloat16 chunk: (2 x 4096 + (2 x 32 + 2 x 8) x 128 + 3 x 14336) x 2048
    x 2 B = 240 MiB of activations, plus 2 x 32 heads x 256 x 256 float32 scores = 16 MiB: 256 MiB."""
    from jaxeval.models.config import config_from_hf
    from jaxeval.plan.cost import prefill_activation_bytes

    config = config_from_hf({"model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
                             "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
                             "num_key_value_heads": 8, "max_position_embeddings": 8192})
    assert prefill_activation_bytes(config, 2048, "bfloat16") == 256 * 2**20
    assert prefill_activation_bytes(config, 100, "float32") == 100 * 61440 * 4 + 2 * 32 * 100 * 256 * 4


def test_rows_that_fit_beside_the_weights_per_chip():
    from jaxeval.plan.batch import rows_that_fit

    one = {"data": 1, "fsdp": 1, "tensor": 1, "context": 1}
    gib = 2**30
    assert rows_that_fit(10 * gib, gib, gib, one, 64) == 8  # 0.9 * 10 - 1 = 8 rows of 1 GiB
    assert rows_that_fit(10 * gib, gib, gib, one, 4) == 4  # the cap
    assert rows_that_fit(gib, gib, gib, one, 64) == 1  # nothing fits: one row, as a plain run would try
    assert rows_that_fit(10 * gib, 2 * gib, gib, dict(one, tensor=2), 64) == 16  # (9 - 1) / 0.5


def test_a_run_with_batch_size_auto_records_the_choice(tmp_path, gen_toy, monkeypatch):
    from jaxeval.plan import batch

    monkeypatch.setattr(batch, "_memory", lambda: (3 * 2**30, "device"))  # the model is the embedded one's config
    flags = ["run", "--tasks", "gen_toy", "--output_path", str(tmp_path), "--out", str(tmp_path / "r.json")]
    assert main([*flags, "--batch_size", "auto"]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    auto = results["config"]["batch_size_auto"]
    assert results["config"]["batch_size"] == "auto" and auto["longest_length"] >= 35  # 3 prompt + 32 new tokens
    per_row = auto["kv_bytes_per_row"] + auto["activation_bytes_per_row"]
    assert auto["activation_bytes_per_row"] > auto["kv_bytes_per_row"]  # a 35-token cache, a 35-token prefill
    expected = batch.rows_that_fit(3 * 2**30, auto["weights_bytes"], per_row,
                                   {"data": 1, "fsdp": 1, "tensor": 1, "context": 1}, 64)
    assert auto["chosen"] == expected and gen_toy.calls[-1]["batch_size"] == expected
    plain = results["config_hash"]
    assert main([*flags, "--batch_size", "auto:2"]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["config"]["batch_size_auto"]["chosen"] == 2 and gen_toy.calls[-1]["batch_size"] == 2
    assert results["config_hash"] == plain  # not hashed: a resumed run may choose another
