"""The report's error bars: per-sample means with their standard error, per context length and
per group, where the results hold per-sample scores; and no local folder on the comparison page."""

from __future__ import annotations

import math

import pytest
from report_fixtures import longbench_section, write_v1

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.report.build import build_report
from jaxeval.report.data import load_runs
from jaxeval.report.spread import METHOD, spread_parts


def keyed_longbench(model: str) -> dict:
    section = longbench_section(model, e=False)
    for dataset, outputs in section["outputs"].items():
        for index, output in enumerate(outputs):
            output["key"] = ["longbench", dataset, "test", index, f"id{index}"]
    return section


def sem(values):
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1) / len(values))


def test_standard_errors_per_length_and_group(tmp_path):
    path = write_v1(tmp_path, "a", "model_a", {"longbench": keyed_longbench("model_a")})
    (run,) = load_runs([path])
    figure, table, note = spread_parts("longbench", [run], run_tasks()["longbench"])
    assert note is None and figure.caption == METHOD
    by_length, by_group = figure.panels
    outputs = run.sections["longbench"]["outputs"]
    qasper = [100 * o["score"] for o in outputs["qasper"]]
    mean = sum(qasper) / len(qasper)
    assert by_group.kind == "bar" and by_group.by_run[run.label]["qasper"] == pytest.approx(mean)
    low, high = by_group.errors[run.label]["qasper"]
    assert (high - low) / 2 == pytest.approx(100 * sem([o["score"] for o in outputs["qasper"]]))
    assert by_length.kind == "line" and len(by_length.x) > 1  # the prompt-length bins of the samples
    rows = dict((row[0], row[1]) for row in table.rows)
    assert rows["qasper"] == f"{mean:.2f} +- {100 * sem([o['score'] for o in outputs['qasper']]):.2f} (n=6)"


def test_the_page_draws_them_and_says_how(tmp_path):
    path = write_v1(tmp_path, "a", "model_a", {"longbench": keyed_longbench("model_a")})
    page = build_report([path], tmp_path / "report", run_tasks(), echo=lambda *a: None)
    html = page.read_text()
    assert (tmp_path / "report" / "longbench_error_bars.png").is_file()
    assert "standard error of the mean" in html and "per-sample mean +- standard error" in html


def test_a_run_without_per_sample_scores_is_named(tmp_path):
    section = longbench_section("model_a", e=False)
    del section["outputs"]
    path = write_v1(tmp_path, "a", "model_a", {"longbench": section})
    (run,) = load_runs([path])
    figure, table, note = spread_parts("longbench", [run], run_tasks()["longbench"])
    assert figure is None and table is None and "no per-sample scores" in note


def test_the_comparison_page_prints_no_local_folder(tmp_path):
    folder = tmp_path / "private_home" / "runs"
    folder.mkdir(parents=True)
    reference = write_v1(folder, "a", "model_a", {"longbench": keyed_longbench("model_a")})
    modified = write_v1(folder, "b", "model_b", {"longbench": keyed_longbench("model_b")})
    page = build_report([modified], tmp_path / "report", run_tasks(), echo=lambda *a: None, reference=reference)
    html = page.read_text()
    assert "paired" in html and "model_b" in html
    assert "private_home" not in html and str(tmp_path) not in html


def test_whiskers_go_on_the_views_own_curve_of_the_same_means(tmp_path):
    """LongBench's length curve is the pooled per-sample mean per length bin: it gets the whiskers."""
    from jaxeval.report.build import build_views
    from jaxeval.report.spread import add_error_bars

    path = write_v1(tmp_path, "a", "model_a", {"longbench": keyed_longbench("model_a")})
    runs = load_runs([path])
    views, _ = build_views(runs, run_tasks())
    add_error_bars(views, runs, run_tasks())
    (view,) = views
    figure, _, _ = spread_parts("longbench", runs, run_tasks()["longbench"])
    ours = figure.panels[0].errors[runs[0].label]
    own = [panel for fig in view.figures[:-1] for panel in fig.panels if panel.errors]
    assert own and any(panel.errors[runs[0].label] == ours for panel in own)
    assert any(note.startswith("whiskers on the plots of per-sample means") for note in view.notes)
