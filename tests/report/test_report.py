"""`jaxeval report`: tables, plot data, HTML, odd and partial inputs, one-line errors."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.cli import main
from jaxeval.errors import DataError
from jaxeval.report.build import build_views
from jaxeval.report.data import length_breakdowns, load_runs, sort_lengths
from report_fixtures import agent_bench_section, longbench_section, two_runs, write_run

FIGURES = ("agent_bench_length", "agent_bench_distance", "agent_bench_heatmap", "longbench_datasets",
           "longbench_length", "longbench_e_length")


def _views(paths):
    views, unknown = build_views(load_runs(paths), run_tasks())
    return {view.name: view for view in views}, unknown


def _figure(view, name):
    (figure,) = [f for f in view.figures if f.name == name]
    return figure


def test_report_command_prints_tables_and_writes_page_with_plots(tmp_path, capsys):
    paths = two_runs(tmp_path)
    out = tmp_path / "report"
    assert main(["report", *map(str, paths), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for expected in ("== agent_bench ==", "Facts recalled at 32k tokens", "== longbench_e ==", "model_a", "model_b"):
        assert expected in printed
    assert re.search(r"Distant tool calls at 8k tokens\s+0\.40  \(5 of 5\)\s+0\.60  \(5 of 5\)", printed)
    page = (out / "index.html").read_text()
    sources = re.findall(r'<img class="plot" src="([^"]+)"', page)
    assert sources == [f"{name}.png" for name in FIGURES]
    for source in sources:
        with Image.open(out / source) as image:
            assert image.format == "PNG" and image.width > 300 and image.height > 200
            colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
            assert colours is not None and len(colours) > 20  # drawn, not a blank canvas


def test_embed_puts_the_plots_inside_the_page(tmp_path):
    out = tmp_path / "report"
    assert main(["report", str(tmp_path / "runs"), "--out", str(out), "--embed"]) == 2  # no such folder yet
    (tmp_path / "runs").mkdir()
    two_runs(tmp_path / "runs")
    assert main(["report", str(tmp_path / "runs"), "--out", str(out), "--embed"]) == 0
    page = (out / "index.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]


def test_plots_put_runs_side_by_side_against_length_and_distance(tmp_path):
    views, unknown = _views(two_runs(tmp_path))
    assert not unknown.rows
    facts = _figure(views["agent_bench"], "agent_bench_length").panels[0]
    assert facts.title == "facts" and facts.x == ("8k", "32k") and set(facts.by_run) == {"model_a", "model_b"}
    distance = _figure(views["agent_bench"], "agent_bench_distance").panels
    assert [p.title for p in distance] == ["facts at 8k", "facts at 32k", "tool_calls at 8k", "tool_calls at 32k"]
    assert distance[1].x == ("0-512", "512-1k", "1k-2k", "2k-4k", "4k-8k", "16k-32k")  # nearest first
    assert distance[1].by_run["model_a"] == {"0-512": 1.0, "512-1k": 1.0, "1k-2k": 1.0, "2k-4k": 0.0,
                                             "4k-8k": 0.0, "16k-32k": 0.0}
    assert distance[1].by_run["model_b"]["16k-32k"] == 1.0
    e_panels = _figure(views["longbench_e"], "longbench_e_length").panels
    assert e_panels[0].title == "average" and e_panels[0].x == ("0-4k", "4-8k", "8k+")
    assert e_panels[0].by_run["model_a"] == {"0-4k": 100.0, "4-8k": 50.0, "8k+": 0.0}
    pooled = _figure(views["longbench"], "longbench_length").panels[0]
    assert pooled.x == ("0-4k", "4-8k", "8-16k") and pooled.by_run["model_b"]["8-16k"] == 100.0
    bars = _figure(views["longbench"], "longbench_datasets").panels[0]
    assert bars.kind == "bar" and bars.x == ("qasper", "hotpotqa")


def test_results_folder_on_an_fsspec_url(tmp_path, capsys):
    """gs:// works like memory:// here: the folder's *.json files are the runs."""
    import fsspec

    fs = fsspec.filesystem("memory")
    for path in two_runs(tmp_path):
        fs.pipe(f"/report-test/evals/{path.name}", path.read_bytes())
    fs.pipe("/report-test/evals/model_a.journal.jsonl", b"{}\n")  # not a results file
    assert [run.label for run in load_runs(["memory://report-test/evals"])] == ["model_a", "model_b"]
    assert main(["report", "memory://report-test/evals", "--out", str(tmp_path / "r")]) == 0
    assert "Distant tool calls at 32k tokens" in capsys.readouterr().out
    assert main(["report", "memory://report-test/nothing.json", "--out", str(tmp_path / "r")]) == 2
    assert "memory://report-test/nothing.json: no such results file" in capsys.readouterr().err


def test_unknown_malformed_and_partial_sections_are_listed_not_fatal(tmp_path, capsys):
    full = write_run(tmp_path, "model_a", {"agent_bench": agent_bench_section("model_a")})
    partial = write_run(tmp_path, "model_b", {
        "agent_bench": agent_bench_section("model_b", splits=("8k",)),
        "longbench_e": {"benchmark": "longbench_e", "scores": {"qasper": {"0-4k": 10.0, "4-8k": float("nan"),
                                                                          "8k+": None}}},
        "longbench": {"scores": "not scored"},  # the known name in another shape
        "helmet_like": {"lengths": {"8k": {"score": 41.0}, "16k": {"score": 30.0}, "32k": None}},
        "mystery": [1, 2, 3],
    })
    assert main(["report", str(full), str(partial), "--out", str(tmp_path / "r")]) == 0
    printed = capsys.readouterr().out
    views, unknown = _views([full, partial])
    assert set(views) == {"agent_bench", "longbench_e", "helmet_like"}
    assert "not in: model_a" in views["longbench_e"].notes
    reasons = {row[1]: row[3] for row in unknown.rows}
    assert set(reasons) == {"longbench", "mystery"}
    assert reasons["longbench"].startswith("not in the longbench layout") and "mystery" in printed
    helmet = _figure(views["helmet_like"], "helmet_like_length").panels[0]
    assert helmet.x == ("8k", "16k", "32k") and helmet.by_run["model_b"] == {"8k": 41.0, "16k": 30.0, "32k": None}
    facts = _figure(views["agent_bench"], "agent_bench_length").panels[0]
    assert facts.by_run["model_b"].keys() == {"8k"}  # a gap at 32k, not an error
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Sections not recognised" in page and "mystery" in page and "NaN" in page


def test_schema_v1_files_plot_every_task_from_results_and_lengths(tmp_path):
    """docs/results_schema.md: leaves at one length, leaves with a list of lengths, details."""
    data = {
        "schema_version": 1,
        "results": {"helmet/recall/8k": {"substring_exact_match": 80.0}, "helmet/recall/16k":
                    {"substring_exact_match": 60.0}, "longbench_e/qasper": {"score_0-4k": 30.0, "score_4-8k": 20.0,
                                                                             "score_8k+": None}},
        "groups": {"helmet": {"8k/overall": 70.0, "16k/overall": 50.0, "16k/recall": 60.0},
                   "longbench_pro": {"token_length/8k": 40.0, "token_length/16k": 35.5, "difficulty/Easy": 50.0}},
        "group_subtasks": {"helmet": ["helmet/recall/8k", "helmet/recall/16k"],
                           "longbench_e": ["longbench_e/qasper"], "agent_bench": [],
                           "longbench_pro": ["longbench_pro"]},
        "headline": {"helmet": [{"row": "Recall at 16k", "value": 60.0}]},
        "lengths": {"helmet/recall/8k": "8k", "helmet/recall/16k": "16k",
                    "longbench_e/qasper": ["0-4k", "4-8k", "8k+"], "longbench_pro": ["8k", "16k"]},
        "details": {"agent_bench": agent_bench_section("model_a")},
        "model": {"path": "gs://bucket/models/model_v1"}, "date": "2026-11-30T00:12:03+00:00",
    }
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data))
    (run,) = load_runs([path])
    assert run.label == "model_v1" and set(run.sections) == {"agent_bench", "helmet", "longbench_e", "longbench_pro"}
    views, unknown = _views([path])
    helmet = {p.title: p for p in _figure(views["helmet"], "helmet_length").panels}
    assert list(helmet) == ["overall", "recall", "helmet/recall substring_exact_match"]  # groups, then leaves
    assert helmet["helmet/recall substring_exact_match"].by_run["model_v1"] == {"8k": 80.0, "16k": 60.0}
    assert helmet["overall"].x == ("8k", "16k") and helmet["recall"].by_run["model_v1"] == {"16k": 60.0}
    assert views["helmet"].tables[0].rows == (("Recall at 16k", "60.00"),)
    (pro,) = _figure(views["longbench_pro"], "longbench_pro_length").panels
    assert pro.title == "token_length" and pro.by_run["model_v1"] == {"8k": 40.0, "16k": 35.5}
    e = _figure(views["longbench_e"], "longbench_e_length").panels[0]
    assert e.by_run["model_v1"] == {"0-4k": 30.0, "4-8k": 20.0, "8k+": None}
    assert "agent_bench_distance" in [f.name for f in views["agent_bench"].figures] and not unknown.rows


def test_length_labels_sort_by_tokens_and_breakdowns_are_found():
    assert sort_lengths(["128k", "8k", "32768", "16k"]) == ("8k", "16k", "32768", "128k")
    assert sort_lengths(["8k+", "4-8k", "0-4k"]) == ("0-4k", "4-8k", "8k+")
    assert sort_lengths(["long", "short", "medium"]) == ("short", "medium", "long")
    found = length_breakdowns({"ids": {"0": 1.0, "1": 0.5}, "nested": {"x": {"8k": 0.5, "64k": {"acc": 0.25}}},
                               "samples": [{"8k": 1.0}], "nothing": {"8k": "n/a"}})
    assert found == {"nested/x": {"8k": 0.5, "64k": 0.25}}


def test_same_model_twice_gets_distinct_labels(tmp_path):
    (tmp_path / "a").mkdir()
    first, second = write_run(tmp_path / "a", "model_a", {}), write_run(tmp_path, "model_a", {})
    assert [run.label for run in load_runs([first, second, second])] == [
        "model_a (model_a)", "model_a (model_a) #2", "model_a (model_a) #3"]


@pytest.mark.parametrize("content, message", [
    (None, "no such results file"),
    ("{\"tasks\": ", "not valid JSON (line 1"),
    ("[1, 2]", "a results file holds a JSON object, found list"),
    ("{\"scores\": {}}", "not a jaxeval results file"),
])
def test_bad_results_files_are_one_line_errors_naming_the_file(tmp_path, capsys, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(DataError, match=re.escape(message)):
        load_runs([path])
    assert main(["report", str(path), "--out", str(tmp_path / "r")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"jaxeval: error: {path}: ") and message in error and error.count("\n") == 1


def test_a_summary_of_another_shape_is_listed_not_fatal(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"schema_version": 1, "results": {"x/a": [1, 2]}, "group_subtasks": {"x": ["x/a"]},
                                "lengths": {"x/a": "8k"}, "groups": {"x": ["not", "a", "mapping"]}}))
    views, unknown = _views([path])
    assert views == {} and [row[:2] for row in unknown.rows] == [("odd", "x")]
    assert unknown.rows[0][3].startswith("unreadable summary (AttributeError")


def test_reads_what_the_schema_module_writes(tmp_path):
    """A version-1 file assembled by jaxeval.run.schema from agent_bench's own summarize()."""
    from jaxeval.benchmarks.agent_bench.benchmark import BENCHMARK
    from jaxeval.run.schema import add_task, empty_results

    results = empty_results()
    section = agent_bench_section("model_b")
    add_task(results, "agent_bench", section, BENCHMARK.summarize("agent_bench", section))
    results["model"] = {"path": "/models/model_b"}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(results))
    views, unknown = _views([path])
    assert list(views) == ["agent_bench"] and not unknown.rows
    (distance,) = [f for f in views["agent_bench"].figures if f.name == "agent_bench_distance"]
    assert distance.panels[0].by_run["model_b"]["4k-8k"] == 1.0
