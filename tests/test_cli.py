"""The command line end to end: the default job, agent-bench, convert, and one-line errors."""

import json

import numpy as np
import pytest

from jaxeval.cli import EMBEDDED_MODEL, main


def test_default_run_scores_the_embedded_model(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Facts recalled at 8k tokens" in printed
    everything = json.loads(out.read_text())
    result = everything["details"]["agent_bench"]
    rows = [row["row"] for row in result["rows"]]
    assert rows[:2] == ["Facts recalled at 8k tokens", "Distant tool calls at 8k tokens"]  # the card's order
    assert "Rules followed at 8k tokens" in rows and "German rules kept far back, worst case" in rows
    # The embedded model recalls planted facts from thousands of tokens back (README states 0.53).
    assert 0.25 <= result["rows"][0]["value"] <= 1.0
    assert set(result["sets"]) == {"facts", "tool_calls", "rules_en", "rules_cs", "rules_de"}
    facts = result["sets"]["facts"]["8k"]
    assert facts["items"] == 4 and facts["unaligned"] == 0
    assert everything["model"]["dtype"] == "float32" and everything["model"]["model_type"] == "llama"
    assert everything["timing"]["tokens_read"] > 4 * 8000 and everything["timing"]["wall_time_s"] > 0
    assert {"jax", "flax", "jaxeval", "transformers"} <= set(everything["package_versions"])
    assert everything["results"]["agent_bench/facts/8k"]["query_accuracy"] == result["rows"][0]["value"]
    assert result["mode"] == "text"


def test_agent_bench_writes_output_path_in_results_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--limit", "1", "--agent_bench_sets", "facts"]) == 0
    (written,) = (tmp_path / "results").glob("tiny_llama-*.json")
    assert json.loads(written.read_text())["details"]["agent_bench"]["sets"]["facts"]["8k"]["items"] == 1


def test_missing_model_is_one_clear_line(tmp_path, capsys):
    code = main(["agent-bench", "--model", str(tmp_path / "nope"), "--data", "x"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and str(tmp_path / "nope") in err


def test_unknown_model_type_names_field(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    assert main(["agent-bench", "--model", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "model_type='bert'" in err and "config.json" in err


def test_convert_round_trip(tmp_path):
    pytest.importorskip("torch")
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    import jaxeval

    torch.manual_seed(0)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                 num_attention_heads=4, num_key_value_heads=2)).save_pretrained(tmp_path / "hf")
    assert main(["convert", str(tmp_path / "hf"), str(tmp_path / "orbax")]) == 0
    assert (tmp_path / "orbax" / "jaxeval.json").is_file()
    ids = np.arange(40) % 64
    a = jaxeval.load_model(tmp_path / "hf", dtype="float32").read(ids, [5, 39], ids[[5, 39]])
    b = jaxeval.load_model(tmp_path / "orbax", dtype="float32").read(ids, [5, 39], ids[[5, 39]])
    np.testing.assert_array_equal(a.logprobs, b.logprobs)
    np.testing.assert_array_equal(a.top1, b.top1)


def test_embedded_model_is_small_package_data():
    size = sum(f.stat().st_size for f in EMBEDDED_MODEL.rglob("*") if f.is_file())
    assert size < 20_000_000


def test_score_longbench_without_a_model(tmp_path, capsys):
    from pathlib import Path

    pred = Path(__file__).parent / "benchmarks/longbench/data/official_eval/pred"
    assert main(["score", "--benchmark", "longbench", "--predictions", str(pred),
                 "--output_path", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "result.json").read_text())
    assert "identical to" in capsys.readouterr().out


def test_run_longbench_e_generates_and_scores(tmp_path, capsys):
    """LongBench-E end to end on a random 1-layer model with the embedded tokenizer (fast)."""
    from flax import nnx

    from jaxeval.weights.orbax import save_checkpoint
    from jaxeval.models.config import config_from_hf
    from jaxeval.models.decoder import Decoder

    hf = dict(model_type="llama", vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
              num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096, eos_token_id=0)
    params = Decoder(config_from_hf(hf), rngs=nnx.Rngs(0)).params()
    save_checkpoint(tmp_path / "m", params, hf, "float32", tokenizer_from=EMBEDDED_MODEL)
    out = tmp_path / "lb.json"
    assert main(["run", "--model", str(tmp_path / "m"), "--tasks", "longbench_e", "--limit", "1",
                 "--out", str(out)]) == 0
    result = json.loads(out.read_text())["details"]["longbench_e"]
    assert result["benchmark"] == "longbench_e"
    assert len(result["scores"]) == 13
    assert "0-4k" in capsys.readouterr().out


def test_unknown_task_is_one_line(capsys):
    assert main(["run", "--tasks", "nope"]) == 2
    assert "unknown task 'nope'" in capsys.readouterr().err
