"""`jaxeval report MODIFIED --reference ORIGINAL`: pairing by key, the paired bootstrap against
a hand computation, per-group and per-length deltas, unpaired samples counted, mismatches refused."""

from __future__ import annotations

import json
import math
import re
from itertools import product

import pytest

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.cli import main
from jaxeval.errors import DataError
from jaxeval.report.compare import compare_runs
from jaxeval.report.paired import SampleScore, pair, paired_bootstrap
from jaxeval.report.build import load_report_runs
from html_tables import parse_tables
from report_fixtures import longbench_section


def test_bootstrap_interval_equals_the_exact_bootstrap_distribution():
    """Deltas (0, 0, 0, 4): a resample's mean is k, k ~ Binomial(4, 1/4): P(k <= 0) = 81/256 = 0.32,
    P(k <= 2) = 243/256 = 0.949, P(k <= 3) = 255/256 = 0.996. So the 2.5th percentile is 0 and the
    97.5th is 3 (both inside a plateau of the exact distribution, so B = 20000 draws find them)."""
    exact = {}
    for draw in product(range(4), repeat=4):  # every resample, equally likely
        mean = sum((0, 0, 0, 4)[i] for i in draw) / 4
        exact[mean] = exact.get(mean, 0) + 1
    cumulative, total, quantiles = 0, 4 ** 4, {}
    for mean in sorted(exact):
        cumulative += exact[mean]
        for q in (0.025, 0.975):
            if q not in quantiles and cumulative / total >= q:
                quantiles[q] = mean
    assert quantiles == {0.025: 0.0, 0.975: 3.0}
    delta = paired_bootstrap([1.0, 2.0, 3.0, 0.0], [1.0, 2.0, 3.0, 4.0], resamples=20000, seed=0)
    assert (delta.n, delta.reference, delta.modified, delta.delta) == (4, 1.5, 2.5, 1.0)
    assert (delta.low, delta.high) == (quantiles[0.025], quantiles[0.975])
    # the same seed gives the same interval; a narrower level gives a narrower one
    assert paired_bootstrap([1, 2, 3, 0], [1, 2, 3, 4], resamples=20000, seed=0) == delta
    narrow = paired_bootstrap([1, 2, 3, 0], [1, 2, 3, 4], resamples=20000, seed=0, level=0.5)
    assert (narrow.low, narrow.high) == (0.0, 2.0)  # quartiles: P(k <= 0) = 0.32 >= 0.25; P(k <= 1) = 0.738 < 0.75


def test_bootstrap_edge_cases_and_pairing():
    same = paired_bootstrap([0.2, 0.5, 0.9], [0.7, 1.0, 1.4])  # every delta 0.5: a zero-width interval
    assert math.isclose(same.delta, 0.5) and math.isclose(same.low, 0.5) and math.isclose(same.high, 0.5)
    assert paired_bootstrap([], []).low is None and paired_bootstrap([1.0], [3.0]).low == 2.0
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])
    ref = [SampleScore("a", "g", "8k", 1.0), SampleScore("b", "g", "8k", 0.0), SampleScore("c", "g", "8k", None)]
    mod = [SampleScore("a", "g", "8k", 0.0), SampleScore("c", "g", "8k", 1.0), SampleScore("d", "g", "8k", 1.0)]
    pairing = pair(ref, mod, ("ref.json", "mod.json"))
    assert [(r.key, m.score) for r, m in pairing.pairs] == [("a", 0.0)]
    assert [s.key for s in pairing.only_reference] == ["b"] and [s.key for s in pairing.only_modified] == ["d"]
    assert [r.key for r, _ in pairing.unscored] == ["c"]
    with pytest.raises(DataError, match="ref.json: sample key 'a' appears twice"):
        pair(ref + ref[:1], mod, ("ref.json", "mod.json"))


def _longbench_run(folder, name, model, flips=(), drop=(), config=None) -> str:
    """A schema-v1 file with a LongBench section; `flips`: (dataset, index) scored 1 - score."""
    section = longbench_section("model_a", e=False)
    for dataset, outputs in section["outputs"].items():
        for index, output in enumerate(outputs):
            output["key"] = ["longbench", dataset, "test", index, f"id{index}"]
            if (dataset, index) in flips:
                output["score"] = 1.0 - output["score"]
        section["outputs"][dataset] = [o for i, o in enumerate(outputs) if (dataset, i) not in drop]
    data = {"schema_version": 1, "results": {}, "details": {"longbench": section},
            "config": {"tasks": ["longbench"], "limit": None, "longbench_data": None, "quantize": "none",
                       **(config or {})},
            "model": {"path": f"/models/{model}", "fingerprint": model}, "run_name": name}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_report_with_a_reference_pairs_counts_and_draws_side_by_side(tmp_path, capsys):
    """model_a's LongBench: qasper and hotpotqa, 6 samples each at 1k..12k prompt tokens, right
    (1) below 6k tokens. The modified run flips qasper's first two samples (1 -> 0) and lacks
    hotpotqa's last one: qasper delta = -2/6 * 100, paired n = 11, one sample in the reference only."""
    ref = _longbench_run(tmp_path, "orig", "tiny")
    mod = _longbench_run(tmp_path, "quant", "tiny-int4", flips={("qasper", 0), ("qasper", 1)},
                         drop={("hotpotqa", 5)}, config={"quantize": "int4"})
    runs, reference = load_report_runs([mod], ref)
    (task,) = compare_runs(reference, runs[1], run_tasks(), resamples=2000).tasks
    assert task.overall.n == 11 and math.isclose(task.overall.delta, -200 / 11)
    assert math.isclose(task.by_group["qasper"].delta, -100 / 3) and task.by_group["hotpotqa"].delta == 0.0
    assert task.by_group["hotpotqa"].low == task.by_group["hotpotqa"].high == 0.0
    assert task.by_group["qasper"].low < task.by_group["qasper"].delta < task.by_group["qasper"].high <= 0.0
    assert [s.key for s in task.pairing.only_reference] == ["longbench/hotpotqa/test/5/id5/0"]
    assert set(task.by_length) == {"0-4k", "4-8k", "8-16k"} and task.by_length["0-4k"].delta == -50.0

    out = tmp_path / "report"
    assert main(["report", mod, "--reference", ref, "--out", str(out), "--bootstrap", "2000"]) == 0
    page = (out / "index.html").read_text()
    assert "<h1>jaxeval report: tiny-int4 (modified) against tiny (reference)</h1>" in page
    tables = parse_tables(page)
    groups = tables["longbench: paired per-sample deltas per group"]
    assert groups[0] == ["group", "paired", "reference", "modified", "delta", "95% CI", "only in reference",
                         "only in modified", "not scored"]
    assert groups[1][:5] == ["all samples", "11", fmt2(600 / 11), fmt2(400 / 11), fmt2(-200 / 11)]
    assert groups[1][6:] == ["1", "0", "0"]
    assert [row[0] for row in groups[2:]] == ["qasper", "hotpotqa"] and groups[3][6] == "1"
    assert tables["What differs between the runs"][1:] == [["quantize", '"none"', '"int4"'],
                                                            ["model.path", '"tiny"', '"tiny-int4"'],
                                                            ["model.fingerprint", '"tiny"', '"tiny-int4"']]
    assert tables["longbench: samples not paired (first 10 of each kind; all are counted above)"][1] == [
        "reference", "longbench/hotpotqa/test/5/id5/0"]
    lengths = tables["longbench: paired deltas per context length"]
    assert [row[0] for row in lengths[1:]] == ["0-4k", "4-8k", "8-16k"] and lengths[1][4] == "-50.00"
    both = tables["longbench: paired deltas per group and context length"]
    assert both[1][:5] == ["qasper @ 0-4k", "2", "100.00", "0.00", "-100.00"] and both[4][0] == "hotpotqa @ 0-4k"
    assert 'src="compare_longbench.png"' in page and (out / "compare_longbench.png").stat().st_size > 5000
    assert "paired percentile bootstrap over items: 2000 resamples" in page
    printed = capsys.readouterr().out
    assert "== longbench (modified vs reference) ==" in printed


def fmt2(value: float) -> str:
    return f"{value:.2f}"


def test_mismatched_runs_are_one_clear_message(tmp_path, capsys):
    ref = _longbench_run(tmp_path, "orig", "tiny")
    other_data = _longbench_run(tmp_path, "other", "tiny", config={"longbench_data": "/data/lb"})
    assert main(["report", other_data, "--reference", ref, "--out", str(tmp_path / "r")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"{other_data}: longbench ran with longbench_data = '/data/lb'" in error
    no_shared = tmp_path / "agent.json"
    no_shared.write_text(json.dumps({"schema_version": 1, "results": {}, "details": {"agent_bench": {"rows": []}},
                                     "run_name": "agent"}))
    assert main(["report", str(no_shared), "--reference", ref, "--out", str(tmp_path / "r")]) == 2
    assert "share no task (modified: agent_bench; reference: longbench)" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    (None, "no such results file"), (b"", "an empty results file"), (b"\xff\xfe{", "not UTF-8 text"),
    (b"{\"results\": ", "not valid JSON")])
def test_a_bad_reference_file_is_one_line_naming_it(tmp_path, capsys, content, message):
    good = _longbench_run(tmp_path, "quant", "tiny-int4")
    bad = tmp_path / "reference.json"
    if content is not None:
        bad.write_bytes(content)
    assert main(["report", good, "--reference", str(bad), "--out", str(tmp_path / "r")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"jaxeval: error: {bad}: ") and message in error and error.count("\n") == 1


def test_samples_without_per_sample_scores_are_said_not_guessed(tmp_path):
    ref = _longbench_run(tmp_path, "orig", "tiny")
    data = json.loads(open(ref).read())
    data["details"]["longbench"].pop("outputs")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({**data, "run_name": "bare"}))
    runs, reference = load_report_runs([bare], ref)
    (task,) = compare_runs(reference, runs[1], run_tasks()).tasks
    assert task.pairing is None and re.search(r"no paired deltas: tiny \(modified\) \(no per-sample scores", task.note)


def test_rules_follow_and_retained_against_the_reference_run():
    """Effects (with - without rule): reference 4, 0.5 (not counted: < 1 nat), 4; modified 2 (half:
    follows), x, 0.5 (an eighth: does not). follow = 1/2; retained = (2 + 0.5) / (4 + 4)."""
    from jaxeval.benchmarks.agent_bench.sample_scores import rules_tables

    def rows(pairs):
        return [{"key": f"agent_bench/rules_en/8k/i/{n}", "config": "rules_en", "split": "8k",
                 "logprob_without_rule": without, "logprob_with_rule": with_rule}
                for n, (without, with_rule) in enumerate(pairs)]

    reference = rows([(-5.0, -1.0), (-3.0, -2.5), (-6.0, -2.0)])
    modified = rows([(-5.0, -3.0), (-3.0, -3.0), (-6.0, -5.5)]) + [{"key": "agent_bench/rules_en/8k/j/0",
                                                                  "config": "rules_en", "split": "8k"}]
    (table,) = rules_tables(({"reference": {"source": "self"}}, reference), ({"reference": {"source": "self"}}, modified))
    assert table.rows == (("rules_en/8k", "0.50", "0.31", "2", "3", "0"),)
    assert "1 targets in one run only" in table.title


def test_helmet_sample_scores_use_the_headline_measure_from_outputs_or_samples():
    from jaxeval.benchmarks.helmet.benchmark import BENCHMARK

    records = [{"key": "helmet/json_kv/8k/kv-0/0", "substring_exact_match": True, "exact_match": False,
                "needle_depth": 0.42},
               {"key": "helmet/json_kv/8k/kv-1/0", "substring_exact_match": False, "exact_match": True}]
    section = {"outputs": {"json_kv/8k": records, "narrativeqa_7892/8k": [{"key": "helmet/narrativeqa_7892/8k/n/0",
                                                                          "rougeL_f1": 0.3}]}}
    scores = BENCHMARK.sample_scores("helmet", section, None)
    assert [(s.group, s.length, s.score, s.depth) for s in scores] == [
        ("json_kv", "8k", 100.0, "40-50%"), ("json_kv", "8k", 0.0, None), ("narrativeqa", "8k", None, None)]
    # outputs written before they kept their key: the samples file's rows, named by their unit
    old = {"outputs": {"json_kv/8k": [{k: v for k, v in r.items() if k != "key"} for r in records]}}
    samples = [{"unit": "json_kv/8k", **records[0]}]
    assert [s.key for s in BENCHMARK.sample_scores("helmet", old, samples)] == ["helmet/json_kv/8k/kv-0/0"]
    assert BENCHMARK.sample_scores("helmet", old, None) is None
