"""run_mrcr on the embedded sample with a scripted backend, journal and resume, window skips,
bad data, and `jaxeval score --benchmark mrcr` on the CLI."""

from __future__ import annotations

import json
import re

import pytest

from jaxeval.benchmarks.mrcr.data import SHIPPED_SAMPLE, load_rows
from jaxeval.benchmarks.mrcr.runner import run_mrcr
from jaxeval.cli import main
from jaxeval.errors import DataError

ROWS = [json.loads(line) for line in SHIPPED_SAMPLE.read_text(encoding="utf-8").splitlines()]
ANSWERS = {row["random_string_to_prepend"]: row["answer"] for row in ROWS}


def perfect(text: str) -> str:
    prefix = re.findall(r"Prepend (\w+) to the", text)[-1]
    return ANSWERS[prefix]


def test_the_sample_is_in_the_dataset_format():
    rows = load_rows(SHIPPED_SAMPLE)
    assert [r.n_needles for r in rows] == [2, 2, 2, 4, 4, 4, 8, 8, 8]
    for row in ROWS:
        messages = json.loads(row["prompt"])
        assert row["answer"] == row["random_string_to_prepend"] + messages[row["desired_msg_index"]]["content"]
        assert row["total_messages"] == len(messages) and messages[-1]["role"] == "user"


def test_a_perfect_model_scores_one_and_long_items_are_counted_skips(tokenizer, scripted, dict_journal):
    backend = scripted(tokenizer, 3000, perfect)
    result = run_mrcr(backend, SHIPPED_SAMPLE, journal=dict_journal)
    summary = result["summary"]
    skipped = [s for s in result["samples"] if s["skipped"]]
    assert summary["skipped"] == len(skipped) > 0 and summary["graded"] + summary["skipped"] == 9
    assert all(s["prompt_tokens"] + s["max_new_tokens"] > 3000 and s["response"] is None for s in skipped)
    assert summary["score"] == 1.0 and backend.calls == summary["graded"]
    assert summary["needles"]["8needle"]["skipped"] >= 1
    assert any("stand-in sample" in d for d in result["deviations"])
    # resumed from the journal: nothing generated again, the same result
    again = scripted(tokenizer, 3000, lambda text: pytest.fail("generated a journaled sample"))
    assert run_mrcr(again, SHIPPED_SAMPLE, journal=dict_journal)["summary"] == summary
    assert sorted(dict_journal.records) == sorted(s["key"] for s in result["samples"] if not s["skipped"])


def test_responses_are_graded_unstripped(tokenizer, scripted):
    backend = scripted(tokenizer, 32768, lambda text: " " + perfect(text))
    result = run_mrcr(backend, SHIPPED_SAMPLE, needles=(2,), limit=1)
    assert result["summary"]["score"] == 0.0 and result["summary"]["graded"] == 1


def test_empty_and_malformed_data_are_errors(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="no MRCR rows"):
        load_rows(empty)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**ROWS[0], "prompt": "not json"}) + "\n")
    with pytest.raises(DataError, match="line 1: 'prompt' is not JSON"):
        load_rows(bad)
    with pytest.raises(DataError, match="n_needles"):
        bad.write_text(json.dumps({**ROWS[0], "n_needles": "two"}) + "\n")
        load_rows(bad)


def test_a_folder_in_the_hub_layout(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for n in (2, 8):
        (tmp_path / f"{n}needle").mkdir()
        rows = [r for r in ROWS if r["n_needles"] == n]
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / f"{n}needle" / f"{n}needle_0.parquet")
    assert [r.n_needles for r in load_rows(tmp_path)] == [2, 2, 2, 8, 8, 8]
    assert [r.n_needles for r in load_rows(tmp_path, (8,))] == [8, 8, 8]


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_jaxeval_score_grades_rows_with_a_response(tmp_path, capsys):
    rows = [{**ROWS[0], "response": ROWS[0]["answer"]}, {**ROWS[3], "response": "no prefix"},
            {**ROWS[6], "response": None}]
    predictions = _write(tmp_path / "preds.jsonl", rows)
    assert main(["score", "--benchmark", "mrcr", "--predictions", str(predictions), "--tokenizer",
                 "jaxeval/assets/tiny_llama", "--output_path", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "33.33 mean grade x100 over 3 graded items (0 skipped" in printed and "1 failed" in printed
    scores = json.loads((tmp_path / "out" / "mrcr_scores.json").read_text())
    assert scores["scores"] == [1.0, 0.0, 0.0]
    assert scores["summary"]["needles"]["2needle"]["bins"]["0-4k"]["graded"] == 1


@pytest.mark.parametrize("rows, message", [
    ([], "no rows to score"),
    ([{"answer": "x", "random_string_to_prepend": "x", "n_needles": 2}], "missing field 'response'"),
    ([{"answer": "x", "n_needles": 2, "response": "x"}], "random_string_to_prepend"),
])
def test_jaxeval_score_bad_input_is_one_line(tmp_path, capsys, rows, message):
    predictions = _write(tmp_path / "preds.jsonl", rows)
    assert main(["score", "--benchmark", "mrcr", "--predictions", str(predictions),
                 "--output_path", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.slow
def test_run_on_the_embedded_model_then_rescore_its_samples(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--tasks", "mrcr", "--limit", "1", "--mrcr_needles", "2", "--mrcr_max_new_tokens", "4",
                 "--output_path", str(out), "--log_samples"]) == 0
    assert "OpenAI-MRCR:" in capsys.readouterr().out
    samples = next(out.glob("*.samples_mrcr.jsonl"))
    assert main(["score", "--benchmark", "mrcr", "--predictions", str(samples),
                 "--output_path", str(tmp_path / "rescored")]) == 0
    details = json.loads(next(out.glob("*mrcr*.json")).read_text())["details"]["mrcr"]
    rescored = json.loads((tmp_path / "rescored" / "mrcr_scores.json").read_text())
    assert rescored["summary"]["score"] == details["summary"]["score"]


def test_registered_described_and_viewed(tokenizer, scripted):
    from jaxeval.benchmarks.mrcr.benchmark import BENCHMARK, MrcrSettings
    from jaxeval.benchmarks.registry import run_tasks, scorers

    assert run_tasks()["mrcr"] is BENCHMARK and scorers()["mrcr"] is BENCHMARK
    assert BENCHMARK.validate("mrcr", MrcrSettings(needles="2,8"))[0].startswith("mrcr: 6 rows valid")
    result = run_mrcr(scripted(tokenizer, 3000, perfect), SHIPPED_SAMPLE)
    summary = BENCHMARK.summarize("mrcr", result)
    assert summary["results"]["mrcr/2needle"]["score_0-4k"] == 1.0
    assert summary["n-samples"]["mrcr/8needle"]["skipped"] == result["summary"]["needles"]["8needle"]["skipped"]
    view = BENCHMARK.report_view("mrcr")([("run", result)])
    assert view.figures and view.length_curve["run"]["0-4k"] == 100.0
    assert any("skipped" in what for _, what, _ in view.issues)


def test_bad_needles_flag():
    from jaxeval.benchmarks.mrcr.benchmark import parse_needles
    from jaxeval.errors import ConfigError

    assert parse_needles("8, 2") == (2, 8)
    with pytest.raises(ConfigError, match="out of 2,4,8"):
        parse_needles("3")


def test_the_samples_of_a_run_with_skips_regrade_to_the_same_summary(tokenizer, scripted, tmp_path):
    from jaxeval.benchmarks.mrcr.rescore import rescore_predictions

    result = run_mrcr(scripted(tokenizer, 3000, lambda text: perfect(text)[:-5]), SHIPPED_SAMPLE)
    samples = _write(tmp_path / "samples.jsonl", result["sample_log"])
    rescored = rescore_predictions(samples)  # no tokenizer: the rows' own bin_tokens
    assert rescored["summary"] == result["summary"] and 0 < result["summary"]["score"] < 1


def test_a_window_too_small_for_every_item_skips_them_all_and_says_so(tokenizer, scripted):
    from jaxeval.benchmarks.mrcr.benchmark import BENCHMARK
    from jaxeval.benchmarks.mrcr.summary import format_table

    result = run_mrcr(scripted(tokenizer, 500, perfect), SHIPPED_SAMPLE)
    assert result["summary"]["skipped"] == 9 and result["summary"]["score"] is None
    assert BENCHMARK.summarize("mrcr", result)["results"]["mrcr"]["score"] is None
    assert "n/a mean grade x100 over 0 graded items (9 skipped" in format_table(result["summary"], "x")
