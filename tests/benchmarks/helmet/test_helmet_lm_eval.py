"""A fractional --limit on HELMET: each dataset and length's share, rounded up; n-samples filled."""

from helmet_helpers import SAMPLE, FakeModel

from jaxeval.benchmarks.helmet.runner import run_helmet
from jaxeval.benchmarks.helmet.summary import summarize
from jaxeval.benchmarks.helmet.tasks import helmet_units


def test_fraction_of_each_unit_and_original_counts(tokenizer):
    units = [u for u in helmet_units(("rag",), ["8k"]) if u.dataset == "kilt_hotpotqa"]
    whole = run_helmet(FakeModel(tokenizer, " x"), units, SAMPLE)["units"][0]["samples"]
    assert whole >= 3
    result = run_helmet(FakeModel(tokenizer, " x"), units, SAMPLE, limit=0.4)
    expected = -(-whole * 4 // 10)  # ceil(whole * 0.4)
    assert expected < whole and result["units"][0]["samples"] == expected
    assert summarize("helmet", result)["n-samples"]["helmet/kilt_hotpotqa/8k"] == {"original": whole,
                                                                                  "effective": expected}


def test_stderrs_next_to_the_averages_from_the_per_item_values(tokenizer):
    import math
    import statistics

    import pytest

    from jaxeval.run.lm_eval_view import lm_eval_view

    units = [u for u in helmet_units(("recall",), ["8k"]) if u.dataset == "json_kv"]
    result = run_helmet(FakeModel(tokenizer, " 7a46d350-d1c2-b04d-4076-3b8732fa718f"), units, SAMPLE,
                        limit=3)  # the first item's answer: right on it, wrong on the others
    records = result["outputs"]["json_kv/8k"]
    summary = summarize("helmet", result)
    leaf = summary["results"]["helmet/json_kv/8k"]
    checked = 0
    for name, average in result["units"][0]["averaged_metrics"].items():
        if "_len" in name:
            assert f"{name}_stderr" not in leaf
            continue
        values = [float(r[name]) for r in records]
        assert average == pytest.approx(100 * statistics.mean(values))
        assert leaf[f"{name}_stderr"] == pytest.approx(100 * statistics.stdev(values) / math.sqrt(len(values)))
        checked += leaf[f"{name}_stderr"] > 0
    assert checked  # the reply is right on some items, wrong on others
    assert lm_eval_view(summary["results"])["helmet/json_kv/8k"]["input_len_stderr,none"] == "N/A"
    assert not any(k.endswith("_stderr") for k in summary["higher_is_better"]["helmet/json_kv/8k"])


def test_sample_rows_hold_the_prompt_hash_length_target_and_raw_output(tokenizer):
    import hashlib

    units = [u for u in helmet_units(("recall",), ["8k"]) if u.dataset == "json_kv"]
    for log_prompts in (False, True):
        model = FakeModel(tokenizer, " 42")
        result = run_helmet(model, units, SAMPLE, limit=2, log_prompts=log_prompts)
        row, ids = result["sample_log"][0], model.calls[0]["prompts"][0]
        prompt = tokenizer.decode(ids, skip_special_tokens=False)
        assert row["prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest() and row["prompt_tokens"] == len(ids)
        assert row["raw_output"] == " 42" and row["output"].endswith(" 42") and row["output"] != " 42"  # prefixed
        assert row["target"] == row["answer"]
        assert row.get("prompt") == (prompt if log_prompts else None)
        assert "prompt" not in result["outputs"]["json_kv/8k"][0]
