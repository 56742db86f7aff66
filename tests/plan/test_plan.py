"""`jaxeval plan`: its counts equal the real run's, its memory sums are the stored weights'."""

import json

import jax
import numpy as np
import pytest

from jaxeval.cli import EMBEDDED_MODEL, main

RUN = ["--limit", "1", "--agent_bench_sets", "facts,tool_calls,rules_en"]


def test_plan_counts_the_tokens_the_run_reads(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    assert main(["plan", *RUN, "--calibrate", "matmul", "--plan_json", str(tmp_path / "plan.json")]) == 0
    printed = capsys.readouterr().out
    assert "agent_bench" in printed and "time:" in printed and "memory:" in printed
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["items"] == {"agent_bench/facts/8k": 1, "agent_bench/tool_calls/8k": 1, "agent_bench/rules_en/8k": 1}
    assert set(plan["tokens"]["agent_bench"]) == {"<=8k"}
    assert plan["totals"]["flops"] > 0 and plan["time"]["wall_time_s"] > 0
    assert plan["memory"]["read_cache_length"] == 8192 and plan["judge"]["calls"] == 0

    assert main(["run", *RUN, "--output_path", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    (results_file,) = (tmp_path / "out").glob("*.json")
    results = json.loads(results_file.read_text())
    assert results["timing"]["tokens_read"] == plan["totals"]["tokens_read"]  # exactly
    recorded = results["plan"]
    assert recorded["estimated"]["tokens_read"] == plan["totals"]["tokens_read"]
    assert recorded["measured"]["tokens_read"] == results["timing"]["tokens_read"]
    assert recorded["ratio_estimated_to_measured"]["tokens_read"] == 1.0
    assert recorded["estimated"]["flops"] == plan["totals"]["flops"]
    assert set(recorded["ratio_estimated_to_measured"]) == {"tokens_read", "wall_time_s", "device_bytes_per_chip",
                                                            "host_bytes"}


@pytest.mark.parametrize("model", ["embedded", "qwen3_5"])
def test_weight_bytes_equal_the_stored_parameters_quantized_or_not(model):
    from jaxeval.models.config import config_from_hf, load_hf_config
    from jaxeval.models.param_layout import param_shapes
    from jaxeval.models.quant import param_bytes, quantize_params
    from jaxeval.plan.cost import weight_bytes
    from tests.models.test_qwen3_5 import CONFIG as HYBRID

    config = (load_hf_config(EMBEDDED_MODEL) if model == "embedded"
              else config_from_hf({**HYBRID, "model_type": "qwen3_5_text"}))  # + its Gated DeltaNet stack
    rng = np.random.default_rng(0)
    params = jax.tree.map(lambda s: rng.standard_normal(s).astype(np.float32), param_shapes(config),
                          is_leaf=lambda x: isinstance(x, tuple))
    assert weight_bytes(config, "float32", None, 128) == param_bytes(params)
    assert weight_bytes(config, "bfloat16", None, 128) == param_bytes(params) // 2
    for kind in ("int8", "int4", "fp8"):
        assert weight_bytes(config, "float32", kind, 32) == param_bytes(quantize_params(params, kind, 32)), kind


def test_generations_are_counted_as_the_engine_batches_them():
    from jaxeval.weights.loader import load_tokenizer_from
    from jaxeval.engine.buckets import length_bucket
    from jaxeval.generation import GenerationOptions, generate
    from jaxeval.models.config import load_hf_config
    from jaxeval.plan.counting import CountingModel
    from jaxeval.plan.estimate import tokens_section

    config = load_hf_config(EMBEDDED_MODEL)
    model = CountingModel(config, load_tokenizer_from(EMBEDDED_MODEL), str(EMBEDDED_MODEL))
    prompts = [[5] * n for n in (30, 300, 70, 9000 - 64)]
    outs = generate(model, prompts, GenerationOptions(64), batch_size=2)
    assert [o.finish_reason for o in outs] == ["length"] * 4
    batches = model.recorder.batches
    # longest first, one length bucket per batch (12,288, 512, 256), batch_size at a time
    assert [b.prompts for b in batches] == [(8936,), (300,), (70, 30)]
    assert batches[0].cache_len == length_bucket(8936 + 63)
    _, totals = tokens_section(config, {"t": (model.recorder, {})})
    assert totals["prompt_tokens"] == 30 + 300 + 70 + 8936 and totals["generated_tokens_max"] == 4 * 64
    with pytest.raises(Exception, match="beyond the model's context"):
        generate(model, [[5] * (config.context_limit - 10)], GenerationOptions(64))


@pytest.mark.parametrize("command", ["plan", "run"])
@pytest.mark.parametrize("flag, value, message", [("--judge_price", "2.5", "IN,OUT"), ("--mfu", "1.5", "(0, 1]"),
                                                   ("--judge_price", "-1,2", "negative")])
def test_bad_plan_flags_are_one_line(command, flag, value, message, capsys, tmp_path):
    assert main([command, "--agent_bench_sets", "facts", "--limit", "1", f"{flag}={value}",
                 "--output_path", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_a_counting_judge_survives_the_reply_limit_copy():
    """judges.base.with_reply_limit copies the judge (HELMET's LongQA cap): copy.copy must not recurse
    through __getattr__ before _judge exists (the RecursionError of every judged plan and run)."""
    from jaxeval.judges.base import with_reply_limit
    from jaxeval.plan.counting import CountingJudge, Recorder

    class Judge:
        max_tokens, spec = 8192, "http:u:m"

        def settings(self):
            return {"spec": self.spec}
    recorder = Recorder()
    limited = with_reply_limit(CountingJudge(Judge(), "judge", None, recorder), 2048)
    assert limited.max_tokens == 2048 and limited.spec == "http:u:m" and limited.settings() == {"spec": "http:u:m"}
    limited.complete(["abcdefgh"])
    assert recorder.judge_calls == [("judge", 2, 2048)]
