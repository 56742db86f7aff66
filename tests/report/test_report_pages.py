"""Reports people read (issue 17 part 3), checked on the page itself: two models over several
lengths, one model's files shown as one run, each benchmark's headline measure, length curves,
length x depth heatmaps, the effective context length and the failures table."""

from __future__ import annotations

import re

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.cli import main
from jaxeval.report.build import build_views
from jaxeval.report.data import Panel, effective_length, load_runs, merge_model_runs
from jaxeval.report.plots import value_range
from report_fixtures import agent_bench_section, helmet_section, write_v1
from html_tables import parse_tables


def _runs(folder):
    """model_a in two files (agent bench; HELMET), model_b in one holding both."""
    return [write_v1(folder, "a-agent", "model_a", {"agent_bench": agent_bench_section("model_a")}),
            write_v1(folder, "a-helmet", "model_a", {"helmet": helmet_section("model_a")}),
            write_v1(folder, "b-all", "model_b", {"agent_bench": agent_bench_section("model_b"),
                                                  "helmet": helmet_section("model_b")})]


def test_two_models_over_several_lengths_on_the_page(tmp_path):
    out = tmp_path / "report"
    assert main(["report", *map(str, _runs(tmp_path)), "--out", str(out), "--embed"]) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<h1>jaxeval report: model_a, model_b (side by side)</h1>" in page  # one model's two files: one run
    assert not re.search(r"src=\"(?!data:image/png;base64,)", page)  # offline: every plot inside the page
    tables = parse_tables(page)
    runs = tables["Runs"]
    assert [row[0] for row in runs[1:]] == ["model_a", "model_b"] and runs[1][1] == "a-agent.json, a-helmet.json"
    (title,) = [t for t in tables if t.startswith("Effective context length")]
    assert "0.9 x the score at the shortest length" in title
    effective = {row[0]: row[1:] for row in tables[title][1:]}
    # HELMET recall: model_a 80, 75, 40 (72 is 0.9 x 80); model_b 50, 50, 48 (>= 45 throughout)
    assert effective["helmet: recall"] == ["16k (below at 32k)", ">= 32k"]
    # facts: model_a right below 2k tokens back, model_b beyond: 3 of 6 at both lengths for each
    assert effective["agent_bench: facts query_accuracy"] == [">= 32k", ">= 32k"]
    headline = tables["Headline measure per dataset and length (0-100; each dataset's own HELMET measure)"]
    assert ["msmarco_rerank_psg @ 16k (NDCG@10)", "31.00", "31.00"] in headline
    assert ["ruler_niah_mk_2 @ 32k (ruler_recall)", "40.00", "48.00"] in headline
    failures = tables["Failures, skips and unscored samples"]
    assert ["model_a", "helmet", "narrativeqa_7892 32k: gpt4_score not scored",
            "judged measure, no --helmet_judge given"] in failures
    assert ["model_b", "helmet", "json_kv 32k: 1 of 10 contexts truncated",
            "prompt longer than the length's budget (HELMET cuts the context tail)"] in failures
    assert any(row[2].startswith("overall at 8k not given") for row in failures[1:])


def test_helmet_is_plotted_with_each_datasets_own_measure_and_depth(tmp_path):
    runs = merge_model_runs(load_runs(_runs(tmp_path)))
    views = {view.name: view for view in build_views(runs, run_tasks())[0]}
    figures = {figure.name: figure for figure in views["helmet"].figures}
    measures = {panel.title: panel.y_label for panel in figures["helmet_length"].panels}
    assert measures == {"json_kv (substring_exact_match)": "substring_exact_match",
                        "ruler_niah_mk_2 (ruler_recall)": "ruler_recall", "ruler_niah_mk_3 (ruler_recall)": "ruler_recall",
                        "ruler_niah_mv (ruler_recall)": "ruler_recall", "msmarco_rerank_psg (NDCG@10)": "NDCG@10",
                        "narrativeqa (gpt4_score)": "gpt4_score"}  # never exact_match
    ruler = next(p for p in figures["helmet_length"].panels if p.title.startswith("ruler_niah_mk_2"))
    assert ruler.x == ("8k", "16k", "32k") and ruler.by_run["model_b"] == {"8k": 50.0, "16k": 50.0, "32k": 48.0}
    recall = next(p for p in figures["helmet_categories"].panels if p.title == "recall")
    assert recall.by_run["model_a"] == {"8k": 80.0, "16k": 75.0, "32k": 40.0}
    depth = {panel.title: panel for panel in figures["helmet_depth"].panels}
    grid = depth["model_a: recall by needle depth"]
    assert grid.kind == "heatmap" and grid.x == ("8k", "16k", "32k") and len(grid.rows) == 10
    # model_a's 32k: the first 4 of 10 needles (depths 0-40%) found
    assert [grid.by_run[row]["32k"] for row in grid.rows] == [100.0] * 4 + [0.0] * 6
    heat = {panel.title: panel for figure in views["agent_bench"].figures if figure.name == "agent_bench_heatmap"
            for panel in figure.panels}
    facts = heat["model_b: facts query_accuracy"]
    assert facts.x == ("8k", "32k") and facts.by_run["16k-32k"] == {"8k": None, "32k": 1.0}


def test_no_single_point_is_drawn_on_an_auto_scaled_axis():
    one = Panel("x", "length", "score", ("8k",), {"a": {"8k": 42.0}, "b": {"8k": 40.0}})
    assert value_range(one) == (0.0, 100.0)
    assert value_range(Panel("x", "l", "s", ("8k",), {"a": {"8k": 0.4}})) == (-0.03, 1.03)
    low, high = value_range(Panel("x", "l", "logprob", ("8k",), {"a": {"8k": -9.0}}))
    assert low < -9.0 and high >= 0.0
    assert value_range(Panel("x", "l", "s", ("8k", "16k"), {"a": {"8k": 42.0, "16k": 30.0}})) is None


def test_effective_length_follows_its_definition():
    assert effective_length({"8k": 50.0, "16k": 46.0, "32k": 44.0, "64k": 48.0}) == "16k (below at 32k)"
    assert effective_length({"8k": 50.0, "32k": 45.0}) == ">= 32k"
    assert effective_length({"8k": 50.0}) == ">= 8k (only length run)"
    assert effective_length({"8k": 0.0, "16k": 0.0}).startswith("n/a (score 0.00 at 8k")
    assert effective_length({"8k": None}) == "n/a (nothing scored)"
    assert effective_length({"8k": 50.0, "16k": 46.0, "32k": 44.0}, fraction=0.8) == ">= 32k"
