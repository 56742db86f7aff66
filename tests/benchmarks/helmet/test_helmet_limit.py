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
