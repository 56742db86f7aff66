"""RULER's report view: the average against length, each task against length, a task x length
heatmap per run, skips as issues, and teacher-forced runs labelled as not RULER's score."""

from jaxeval.benchmarks.ruler.report_view import ruler_view
from jaxeval.benchmarks.ruler.sample_scores import ruler_sample_scores


def _section(mode="generate"):
    units = [{"task": "niah_single_1", "length": 4096, "score": 100.0}, {"task": "vt", "length": 4096, "score": 80.0},
             {"task": "niah_single_1", "length": 8192, "score": 90.0},
             {"task": "vt", "length": 8192, "score": None, "skipped": 2, "skip_reason": "longer than the window"}]
    if mode == "teacher_forced":
        units = [{**u, "score": None, "teacher_forced": {"greedy_match": 50.0, "gold_logprob_mean": -1.0}} for u in units]
    return {"mode": mode, "units": units, "averages": {"4096": 90.0, "8192": None}, "effective_length": None,
            "outputs": {"vt/4096": [{"key": "ruler/vt/4096/0", "task": "vt", "length": 4096, "score": 80.0}]}}


def test_view_draws_length_curves_and_a_heatmap_per_run():
    view = ruler_view([("a", _section()), ("b", _section())])
    names = [figure.name for figure in view.figures]
    assert names == ["ruler_length", "ruler_tasks", "ruler_heatmap"]
    heat = view.figures[2].panels
    assert len(heat) == 2 and heat[0].kind == "heatmap" and heat[0].rows == ("niah_single_1", "vt")
    assert heat[0].by_run["niah_single_1"] == {"4096": 100.0, "8192": 90.0}
    assert view.length_curve["a"] == {"4096": 90.0, "8192": None}
    assert any("skipped" in issue[1] for issue in view.issues)


def test_teacher_forced_runs_are_labelled():
    view = ruler_view([("tf", _section("teacher_forced"))])
    assert any("NOT the official RULER score" in note for note in view.notes)
    assert "not RULER's score" in view.figures[-1].panels[0].title


def test_sample_scores_pair_by_journal_key():
    (score,) = ruler_sample_scores(_section(), None)
    assert (score.key, score.group, score.length, score.score) == ("ruler/vt/4096/0", "vt", "4096", 80.0)
