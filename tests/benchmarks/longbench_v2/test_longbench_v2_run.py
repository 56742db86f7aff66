"""run_longbench_v2 with scripted backends (0shot, CoT, loglik, window cuts, resume) and `jaxeval score`."""

from __future__ import annotations

import dataclasses
import types
import json
import re

import numpy as np
import pytest

from jaxeval.benchmarks.longbench_v2.data import SHIPPED_SAMPLE, load_items
from jaxeval.benchmarks.longbench_v2.runner import run_longbench_v2
from jaxeval.cli import main
from jaxeval.errors import DataError

ITEMS = json.loads(SHIPPED_SAMPLE.read_text(encoding="utf-8"))
ANSWERS = {item["question"]: item["answer"] for item in ITEMS}


def knows(text: str) -> str:
    question = re.findall(r"this question: (.*?)\nChoices", text)[-1]
    return f"**The correct answer is ({ANSWERS[question]})**"


def test_the_sample_covers_every_bucket():
    items = load_items()
    assert {(i["difficulty"], i["length"]) for i in items} == {(d, n) for d in ("easy", "hard")
                                                               for n in ("short", "medium", "long")}


def test_0shot_right_answers_score_100_and_resume(tokenizer, scripted, dict_journal):
    backend = scripted(tokenizer, 32768, knows)
    result = run_longbench_v2(backend, journal=dict_journal)
    assert result["table"]["overall"] == 100.0 and result["table"]["counts"]["overall"] == 8
    assert all(row["pred"] == row["answer"] and row["judge"] for row in result["samples"])
    assert all(len(row["context"]) <= 1000 for row in result["samples"])  # pred.py's context[:1000]
    assert any("stand-in" not in d for d in result["deviations"])  # max_len below 120000 is recorded
    again = scripted(tokenizer, 32768, lambda text: pytest.fail("generated a journaled item"))
    assert run_longbench_v2(again, journal=dict_journal)["table"] == result["table"]


def test_cot_makes_two_calls_and_answers_from_the_second(tokenizer, scripted):
    seen = []

    def reply(text):
        seen.append(text)
        return "  I reason at length.  " if "step by step:<" in text or text.rstrip().endswith("step by step:") \
            else knows(text)

    backend = scripted(tokenizer, 32768, reply)
    result = run_longbench_v2(backend, variant="cot", limit=2)
    assert backend.calls == 4 and result["table"]["overall"] == 100.0
    assert all(row["response_cot"] == "I reason at length." for row in result["samples"])
    assert "step by step: I reason at length.\n\nBased on the above" in seen[-1]


def test_a_small_window_cuts_the_middle(tokenizer, scripted):
    result = run_longbench_v2(scripted(tokenizer, 2048, knows), limit=4)
    prompting = result["prompting"]
    assert prompting["max_len"] == 2048 - 1088 and prompting["truncated"] >= 1
    assert all(row["prompt_tokens"] + 128 <= 2048 for row in result["samples"])


def test_empty_responses_are_kept_scored_wrong_and_counted(tokenizer, scripted):
    result = run_longbench_v2(scripted(tokenizer, 32768, lambda text: "   "), limit=3)
    assert result["table"]["overall"] == 0.0 and result["prompting"]["empty_responses"] == 3
    assert any("empty responses" in d for d in result["deviations"])


@dataclasses.dataclass
class FakeRead:
    logprobs: np.ndarray
    top1: np.ndarray


class PrefersB:
    """A read backend whose next-token distribution always favours the letter B."""

    def __init__(self, tokenizer):
        self.tokenizer, self.config = tokenizer, type("C", (), {"context_limit": 32768})()
        self.b = tokenizer("B", add_special_tokens=False)["input_ids"][0]

    def read_many(self, requests, *, batch_size=1, share_prefixes=True):  # the model contract's read entry
        return types.SimpleNamespace(results=[self.read(*request) for request in requests])

    def read(self, ids, positions, tokens):
        assert self.tokenizer.decode(list(ids[:-1])).endswith("The correct answer is (")
        tokens = np.asarray(tokens)
        return FakeRead(np.where(tokens == self.b, -0.1, -3.0).astype(np.float32), np.zeros(1, np.int32))


def test_loglik_picks_the_most_likely_letter_and_says_it_is_not_official(tokenizer):
    result = run_longbench_v2(PrefersB(tokenizer), variant="loglik")
    share_b = sum(item["answer"] == "B" for item in ITEMS) / len(ITEMS)
    assert result["table"]["overall"] == round(100 * share_b, 1)
    assert all(row["pred"] == "B" and set(row["logprobs"]) == set("ABCD") for row in result["samples"])
    assert any("not LongBench v2's official" in d for d in result["deviations"])


def test_bad_data(tmp_path):
    (tmp_path / "data.json").write_text("[]")
    with pytest.raises(DataError, match="no LongBench v2 items"):
        load_items(tmp_path)
    (tmp_path / "data.json").write_text(json.dumps([{**ITEMS[0], "answer": "E"}]))
    with pytest.raises(DataError, match="answer must be one of"):
        load_items(tmp_path)


def test_jaxeval_score_recomputes_pred_and_judge(tmp_path, capsys):
    rows = [{"_id": "1", "difficulty": "easy", "length": "short", "answer": "A",
             "response": "The correct answer is (A)", "pred": "B", "judge": False},
            {"_id": "2", "difficulty": "hard", "length": "long", "answer": "C", "response": "the correct answer is (C)"}]
    predictions = tmp_path / "Model-X.jsonl"
    predictions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["score", "--benchmark", "longbench_v2", "--predictions", str(predictions),
                 "--output_path", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "overall 50.0  easy 100.0  hard 0.0  short 100.0  medium n/a  long 0.0" in printed
    assert "1 of 1 rows differ from the file's" in printed
    assert (tmp_path / "out" / "result.txt").read_text().splitlines()[1] == "Model-X\t50.0\t100.0\t0.0\t100.0\tn/a\t0.0"
    array = tmp_path / "array.json"  # result.py reads a JSON array too
    array.write_text(json.dumps(rows))
    assert main(["score", "--benchmark", "longbench_v2", "--predictions", str(array), "--compensated",
                 "--output_path", str(tmp_path / "out2")]) == 0
    assert "overall 62.5" in capsys.readouterr().out


@pytest.mark.parametrize("text, message", [("", "no rows to score"),
                                           ('{"_id": "1", "difficulty": "easy", "length": "short", "answer": "A"}\n',
                                            "missing or non-string field 'response'")])
def test_jaxeval_score_bad_input(tmp_path, capsys, text, message):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(text)
    assert main(["score", "--benchmark", "longbench_v2", "--predictions", str(predictions),
                 "--output_path", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_run_both_tasks_on_the_embedded_model_then_rescore(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "--tasks", "longbench_v2,longbench_v2_loglik", "--limit", "1", "--output_path", str(out),
                 "--log_samples"]) == 0
    assert "log-likelihood (not the official score)" in capsys.readouterr().out
    samples = next(out.glob("*.samples_longbench_v2.jsonl"))
    assert main(["score", "--benchmark", "longbench_v2", "--predictions", str(samples),
                 "--output_path", str(tmp_path / "rescored")]) == 0
    assert "0 of 1 rows differ" in capsys.readouterr().out


def test_registered_summarized_and_viewed(tokenizer, scripted):
    from jaxeval.benchmarks.longbench_v2.benchmark import BENCHMARK, LongBenchV2Settings
    from jaxeval.benchmarks.registry import run_tasks, scorers

    assert run_tasks()["longbench_v2_loglik"] is BENCHMARK and scorers()["longbench_v2"] is BENCHMARK
    assert BENCHMARK.validate("longbench_v2", LongBenchV2Settings())[0].startswith("longbench_v2: 8 items valid")
    result = run_longbench_v2(scripted(tokenizer, 2048, knows), limit=4)
    summary = BENCHMARK.summarize("longbench_v2", result)
    assert summary["results"]["longbench_v2"]["score"] == 100.0 and summary["results"]["longbench_v2/long"]["score"] is None
    view = BENCHMARK.report_view("longbench_v2_loglik")([("run", result)])
    assert "not the official score" in view.tables[0].title
    assert view.length_curve["run"] == {"short": 100.0, "medium": 100.0, "long": None}
    assert any("cut in the middle" in what for _, what, _ in view.issues)
