"""RULER from the command line: a run on a random 1-layer model with the embedded tokenizer
(journal, resume, --log_samples, a length beyond the window as a counted skip, teacher-forced
mode labelled as not the official score), `jaxeval score` over official prediction files
(chunk files included, the folder left untouched) and one-line errors for bad input."""

import json

import pytest

from jaxeval.cli import EMBEDDED_MODEL, main

pytestmark = pytest.mark.usefixtures("punkt_tables")
FLAGS = ["--tasks", "ruler", "--ruler_lengths", "1024,4096", "--ruler_subtasks", "vt,fwe", "--limit", "2"]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from flax import nnx

    from jaxeval.weights.orbax import save_checkpoint
    from jaxeval.models.config import config_from_hf
    from jaxeval.models.decoder import Decoder

    hf = dict(model_type="llama", vocab_size=4096, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
              num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048, eos_token_id=0)
    folder = tmp_path_factory.mktemp("ruler_model") / "m"
    save_checkpoint(folder, Decoder(config_from_hf(hf), rngs=nnx.Rngs(0)).params(), hf, "float32",
                    tokenizer_from=EMBEDDED_MODEL)
    return str(folder)


def test_run_scores_skips_the_length_beyond_the_window_and_resumes(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    flags = ["run", "--model", model, *FLAGS, "--ruler_cache_dir", str(tmp_path / "cache"),
             "--output_path", str(tmp_path / "out"), "--log_samples"]
    assert main(flags) == 0
    printed = capsys.readouterr().out
    assert "RULER (official generate-and-match score" in printed and "skipped fwe @ 4096" in printed
    (results,) = (tmp_path / "out").glob("*.json")
    data = json.loads(results.read_text())
    section = data["details"]["ruler"]
    units = {(u["task"], u["length"]): u for u in section["units"]}
    assert units[("vt", 1024)]["samples"] == 2 and units[("vt", 1024)]["score"] is not None
    assert units[("vt", 1024)]["cache"] == "generated" and units[("vt", 1024)]["max_new_tokens"] == 30
    assert units[("vt", 4096)]["samples"] == 0 and units[("vt", 4096)]["skipped"] == 2
    assert "window (2048 tokens)" in section["skipped_lengths"]["4096"]
    assert section["template"] == "chat" and section["averages"]["4096"] is None
    assert data["results"]["ruler/vt/1024"]["string_match_all"] == units[("vt", 1024)]["score"]
    assert data["n-samples"]["ruler/vt/4096"]["skipped"] == 2
    (samples,) = (tmp_path / "out").glob("*.samples_ruler.jsonl")
    rows = [json.loads(line) for line in samples.read_text().splitlines()]
    assert {row["key"] for row in rows} >= {"ruler/vt/1024/0", "ruler/fwe/1024/1"}
    (journal,) = (tmp_path / "out").glob("*.journal.jsonl")
    assert len(journal.read_text().splitlines()) == 1 + 4
    # resumed: nothing is generated again, the samples come from the cache, the scores are the same
    from jaxeval.benchmarks import loop
    from jaxeval.plan.counting import CountingModel

    real = loop.generate

    def only_planned(backend, *args, **kwargs):  # the run's plan counts requests; the model generates nothing
        assert isinstance(backend, CountingModel), "generated again"
        return real(backend, *args, **kwargs)

    monkeypatch.setattr(loop, "generate", only_planned)  # the sample loop sends every request
    assert main(flags) == 0
    again = json.loads(results.read_text())["details"]["ruler"]
    assert again["units"][0]["cache"] == "hit"
    assert [u["score"] for u in again["units"]] == [u["score"] for u in section["units"]]


def test_teacher_forced_mode_is_labelled_not_the_official_score(model, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    out = tmp_path / "tf.json"
    assert main(["run", "--model", model, *FLAGS, "--ruler_teacher_forced", "--ruler_no_cache", "--out", str(out)]) == 0
    assert "NOT the official RULER score" in capsys.readouterr().out
    data = json.loads(out.read_text())
    section = data["details"]["ruler"]
    assert section["mode"] == "teacher_forced" and section["official_score"] is False
    unit = next(u for u in section["units"] if u["task"] == "vt" and u["length"] == 1024)
    assert unit["score"] is None and unit["teacher_forced"]["gold_logprob_mean"] < 0
    assert "NOT the official" in unit["teacher_forced"]["note"]
    assert any("not the official RULER score" in d for d in data["deviations"]["ruler"])
    assert "tf_greedy_match" in data["results"]["ruler/vt/1024"]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _pred(pred, outputs, index):
    return {"index": index, "pred": pred, "input": "...", "outputs": outputs, "others": {}, "truncation": -1,
            "length": 100}


def test_score_rescores_official_predictions_without_touching_them(tmp_path, capsys):
    pred = tmp_path / "synthetic" / "4096" / "pred"
    pred.mkdir(parents=True)
    _write(pred / "niah_multivalue.jsonl", [_pred(" 1, 2 and\t3", ["1", "2", "3", "4"], 0), _pred("", ["1"], 1)])
    _write(pred / "qa_1.jsonl", [_pred("stale", ["x"], 0)])  # replaced by its chunk files, as evaluate.py merges them
    _write(pred / "qa_1-0.jsonl", [_pred("Paris", ["paris", "Lyon"], 0)])
    _write(pred / "qa_1-1.jsonl", [_pred("Rome", ["Berlin"], 1)])
    before = sorted(p.name for p in pred.iterdir())
    assert main(["score", "--benchmark", "ruler", "--predictions", str(tmp_path / "synthetic")]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in pred.iterdir()) == before
    written = json.loads((tmp_path / "synthetic_rescored" / "ruler_rescored.json").read_text())
    scores = {(u["task"], u["length"]): (u["score"], u["nulls"]) for u in written["units"]}
    assert scores == {("niah_multivalue", 4096): (37.5, "1/2"), ("qa_1", 4096): (50.0, "0/2")}
    assert "37.50" in printed


@pytest.mark.parametrize("content,message", [
    ("", "no prediction rows"),
    ('{"index": 0, "pred": "a", "outputs": ["a"], "others": {}}\n', "no 'input' field"),
    ("not json\n", "line 1"),
])
def test_bad_prediction_files_are_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "vt.jsonl"
    path.write_text(content)
    assert main(["score", "--benchmark", "ruler", "--predictions", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_bad_haystack_file_is_one_line(model, tmp_path, capsys):
    empty = tmp_path / "essay.json"
    empty.write_text("")
    assert main(["run", "--model", model, "--tasks", "ruler", "--ruler_subtasks", "niah_single_2",
                 "--ruler_essay", str(empty), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "--ruler_essay" in err and "empty" in err and len(err.strip().splitlines()) == 1


def test_plan_counts_the_samples_and_the_skipped_length(model, tmp_path, capsys):
    assert main(["plan", "--model", model, *FLAGS, "--ruler_cache_dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr().out
    plan = json.loads(printed[printed.index("\n{") + 1:])
    assert plan["items"] == {"ruler/vt/1024": 2, "ruler/fwe/1024": 2, "ruler/vt/4096": 0, "ruler/fwe/4096": 0}
    assert plan["tokens"]["ruler"]["<=1k"]["requests"] == 4
