"""run_helmet end to end on the embedded sample with a fake model: prompts, generation settings,
answer prefixes, journal keys and resumption, judges, category table."""

from __future__ import annotations

import pytest
from helmet_helpers import SAMPLE, FakeJudge, FakeModel

from jaxeval.benchmarks.helmet.runner import GenerationSettings, run_helmet
from jaxeval.benchmarks.helmet.tasks import helmet_units


def test_recall_run_prepends_prefix_and_never_stops_at_newline(tokenizer):
    model = FakeModel(tokenizer, reply=" 5938869 and more\nnext line")
    units = helmet_units(("recall",), ["8k"])
    result = run_helmet(model, units, SAMPLE, limit=2)
    assert all(call["stop"] is None and call["temperature"] == 0.0 for call in model.calls)
    assert [c["max_new_tokens"] for c in model.calls] == [50, 100, 50, 100]  # G per config
    mk2 = result["outputs"]["ruler_niah_mk_2/8k"][0]
    assert mk2["output"].startswith("The special magic numbers for ") and mk2["output"].endswith("next line")
    assert "context" not in mk2 and mk2["input_len"] > 0
    kv = result["outputs"]["json_kv/8k"][0]
    assert kv["output"] == "Corresponding value: 5938869 and more\nnext line"
    assert kv["parsed_output"] == "5938869 and more"
    cats = result["collect"]["8k"]["categories"]
    assert cats["recall"]["complete"] and result["collect"]["8k"]["overall"] is None


def test_rag_and_longqa_prompts(tokenizer):
    model = FakeModel(tokenizer, reply=" Paris")
    units = [u for u in helmet_units(("rag", "longqa"), ["8k"]) if u.dataset in ("kilt_nq", "infbench_choice_eng_7982")]
    result = run_helmet(model, units, SAMPLE, limit=1)
    rag_prompt = tokenizer.decode(model.calls[0]["prompts"][0])
    assert rag_prompt.startswith("Use the given documents") and rag_prompt.endswith("?\nAnswer:")
    assert rag_prompt.count("\nAnswer: ") == 3  # instruction format line + two demos
    chat_prompt = tokenizer.decode(model.calls[1]["prompts"][0])
    assert chat_prompt.startswith("<|im_start|>user\nYou are given a story and a question with multiple choices")
    assert "Options:\nA. " in chat_prompt and chat_prompt.endswith("<|im_start|>assistant\n")
    mc = result["outputs"]["infbench_choice_eng_7982/8k"][0]
    assert mc["output"] == " Paris"  # chat mode: no prefix prepended
    assert result["units"][1]["notes"]["pretruncation"].startswith("none here")


def test_journal_keys_and_resume(tokenizer, dict_journal):
    units = [u for u in helmet_units(("rag",), ["8k"]) if u.dataset == "kilt_hotpotqa"]
    journal = dict_journal
    first = run_helmet(FakeModel(tokenizer, " x"), units, SAMPLE, limit=3, journal=journal)
    keys = sorted(journal.records)
    assert keys[0].startswith("helmet/kilt_hotpotqa/8k/hotpotqa-dev-") and len(keys) == 3
    assert sum(k.endswith("/1") for k in keys) >= 1  # same question at a second depth: sample index 1
    again = FakeModel(tokenizer, " other")
    second = run_helmet(again, units, SAMPLE, limit=3, journal=journal)
    assert again.calls == [] and second["units"][0]["averaged_metrics"] == first["units"][0]["averaged_metrics"]


def test_judged_longqa_and_agenticlu_table(tokenizer):
    units = [u for u in helmet_units(("longqa",), ["8k"], agenticlu=True) if u.dataset.startswith("narrativeqa")]
    judge = FakeJudge(lambda p: '{"fluency": 1, "correctness": 3}')
    result = run_helmet(FakeModel(tokenizer, " a"), units, SAMPLE, limit=2, judge=judge)
    unit = result["units"][0]
    assert unit["averaged_metrics"]["gpt4_score"] == pytest.approx(100.0) and unit["judge"]["gpt4_score"]["judged"] == 2
    verdicts = iter(["yes", None])
    agent = FakeJudge(lambda p: next(verdicts))
    model = FakeModel(tokenizer, " a")
    settings = GenerationSettings(temperature=0.6, shots=0, generation_max_length=1024)
    result = run_helmet(model, units, SAMPLE, limit=2, judge=agent, agenticlu=True, settings=settings)
    assert model.calls[0]["max_new_tokens"] == 1024 and model.calls[0]["temperature"] == 0.6
    assert "For example" not in tokenizer.decode(model.calls[0]["prompts"][0])  # 0 shots
    assert result["accuracy_table"] == {"narrativeqa": {"8k": 100.0}}
    assert result["units"][0]["judge"]["accuracy"]["failed"] == 1
