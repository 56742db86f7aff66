"""Judges on saved outputs: HELMET LongQA / summarisation, AgenticLU; failures counted, never a silent 0."""

from __future__ import annotations

import pytest
from helmet_helpers import FakeJudge

from jaxeval.benchmarks.helmet import judging


def test_longqa_prompt_fields_and_score():
    judge = FakeJudge(lambda p: 'Reasoning... {"x": 1} then {"fluency": 1, "correctness": 2}')
    items = [{"question": "Who?", "answer": ["Ada", "Ada L."], "output": "Answer: Ada\nLovelace"}]
    got = judging.longqa_judgements(items, judge)
    assert got[0]["score"] == 2.0
    assert "Correct answers: ['Ada', 'Ada L.']" in judge.prompts[0]
    assert judge.prompts[0].rstrip().endswith("Answer: Ada Lovelace")  # newlines made spaces before parsing
    assert judging.summarize_judgements(got, divisor=3)["score"] == pytest.approx(200 / 3)


def test_longqa_failures_counted_and_excluded():
    replies = iter([None, "no json here", '{"fluency": 1, "correctness": 3}'])
    judge = FakeJudge(lambda p: next(replies))
    items = [{"question": "q", "answer": ["a"], "output": "a"}] * 3
    summary = judging.summarize_judgements(judging.longqa_judgements(items, judge), divisor=3)
    assert summary == {"score": 100.0, "judged": 1, "failed": 2,
                       "failure_reasons": {"HTTP 500": 1, "unparseable": 1}}


def test_summ_f1_from_three_replies():
    def answer(prompt):
        if '{"fluency"' in prompt[-200:]:
            return '{"fluency": 1}'
        if '{"recall"' in prompt[-300:]:
            return 'found two {"recall": 2}'
        return '{"precision": 3, "sentence_count": 4}'
    judge = FakeJudge(answer)
    items = [{"output": " A summary. ", "keypoints": ["k1", "k2", "k3", "k4"], "expert_summary": "E"}]
    got = judging.summ_judgements(items, judge, book=False)
    p, r = 3 / 4, 2 / 4
    assert got[0]["score"] == pytest.approx(2 * p * r / (p + r))
    assert "1. k1\n2. k2" in judge.prompts[1] and 'Expert summary: "E"' in judge.prompts[2]


def test_agenticlu_default_prompt_and_verdicts():
    replies = iter(["Yes, it is.", "no", "Maybe", None])
    judge = FakeJudge(lambda p: next(replies))
    items = [{"question": "Who?", "answer": ["Ada"], "output": "Answer: Ada"},
             {"question": "Which?", "answer": ["B", "B. cat"], "output": "Answer: A"}] * 2
    got = judging.agenticlu_judgements(items, judge)
    assert [g["score"] for g in got] == [1.0, 0.0, None, None]
    assert judge.prompts[0] == "Question: Who?\nGold: Ada\nModel: Ada\nIs the model answer correct?"
    assert "Gold: B. cat" in judge.prompts[1]
    summary = judging.summarize_judgements(got)
    assert summary["score"] == 50.0 and summary["failed"] == 2


def test_agenticlu_prompt_file(tmp_path):
    path = tmp_path / "f.txt"
    path.write_text("Q={question} G={gold} P={prediction}")
    judge = FakeJudge(lambda p: "yes")
    judging.agenticlu_judgements([{"question": "q", "answer": "g", "output": "p"}], judge, prompt_file=path)
    assert judge.prompts == ["Q=q G=g P=p"]


def test_verbatim_helmet_prompts_shipped():
    text = (judging.JUDGE_PROMPTS / "helmet_longqa_judge.txt").read_text()
    assert text.startswith("Please act as an impartial judge") and "{parsed_output}" in text


def test_longqa_judge_replies_are_capped_at_upstreams_2048_tokens():
    """eval_gpt4_longqa.py asks for at most 2,048 tokens; the summary judge keeps its 4,096."""
    seen = []

    class LimitedJudge(FakeJudge):
        max_tokens = 4096

        def complete(self, prompts):
            seen.append(self.max_tokens)
            return super().complete(prompts)

    judge = LimitedJudge(lambda p: '{"fluency": 1, "correctness": 1}')
    judging.longqa_judgements([{"question": "q", "answer": ["a"], "output": "a"}], judge)
    assert seen == [2048] and judge.max_tokens == 4096 and len(judge.prompts) == 1
