"""run_longbench_pro with a scripted backend: prompts, runs, journal, scoring, summary."""

from __future__ import annotations

import pytest

import jaxeval.benchmarks.longbench_pro.runner as runner
from jaxeval.benchmarks.longbench_pro.data import load_records
from jaxeval.benchmarks.longbench_pro.metrics import summary_max_rouge_l
from jaxeval.benchmarks.longbench_pro.prompts import PromptSettings, build_prompt
from jaxeval.errors import ConfigError

from conftest import DictJournal, FakeSemSim, ScriptedBackend

RECORDS = load_records()
_BY_PROMPT: dict[tuple[int, ...], object] = {}


@pytest.fixture(autouse=True)
def prompts_by_record(tiny_tokenizer):
    if not _BY_PROMPT:
        settings = PromptSettings(truncation_length=100_000, max_new_tokens=32)
        _BY_PROMPT.update({build_prompt(r, settings, tiny_tokenizer, tiny_tokenizer, 100_000).ids: r for r in RECORDS})


def gold_reply(prompt: tuple[int, ...], seed: int) -> str:
    """The perfect answer of the record this prompt was built from (checks every gold is scorable)."""
    record = _BY_PROMPT[prompt]
    marker = "[答案]" if record.is_zh else "[Answer]"
    return f"{marker}\n" + "\n".join(record.answer[:1] if record.secondary_task.startswith("T4") else record.answer)


@pytest.fixture
def semsim(monkeypatch):
    fake = FakeSemSim(0.5)
    monkeypatch.setattr(runner, "load_semsim", lambda settings: (fake, {"model": "fake"}))
    return fake


def run(backend, **kwargs):
    return runner.run_longbench_pro(backend, truncation_length=100_000, max_new_tokens=32, temperature=0.7,
                                    **kwargs)


def test_perfect_answers_score_one_and_summaries_get_their_formula(tiny_tokenizer, semsim):
    backend = ScriptedBackend(tiny_tokenizer, gold_reply, window=100_000)
    result = run(backend, runs=2, batch_size=16)
    samples = result["samples"]
    assert len(samples) == 2 * len(RECORDS) and {s["bon_idx"] for s in samples} == {1, 2}
    for s in samples:
        assert s["success"], s
        if s["secondary_task"].startswith("T4"):
            rouge = summary_max_rouge_l(s["answer"], s["prediction"], s["language"] == "Chinese")
            assert s["metric"] == pytest.approx(0.25 + 0.5 * rouge, abs=1e-15)
        else:
            assert s["metric"] == 1.0, s
    assert {c["seed"] for c in backend.calls} == {0, 1} and {c["temperature"] for c in backend.calls} == {0.7}
    assert result["summary"]["total_questions_num"] == len(RECORDS)
    assert result["prompting"]["question_field"] == "question_nonthinking"
    assert result["prompting"]["truncated"] == 0


def test_journal_keys_and_resume(tiny_tokenizer, semsim):
    journal = DictJournal()
    first = run(ScriptedBackend(tiny_tokenizer, gold_reply, window=100_000), runs=2, limit=1, journal=journal)
    ids = [s["id"] for s in first["samples"] if s["bon_idx"] == 1]
    assert journal.puts == [f"longbench_pro/nonthinking/{i}/{run}" for run in (1, 2) for i in ids]
    backend = ScriptedBackend(tiny_tokenizer, lambda prompt, seed: pytest.fail("generated again"), window=100_000)
    second = run(backend, runs=2, limit=1, journal=journal)
    assert backend.calls == [] and second["samples"] == first["samples"]


def test_thinking_model_scores_text_after_the_reasoning(tiny_tokenizer, semsim):
    replies = {0: "<think>[Answer]\nwrong</think>", 1: "still thinking [Answer]"}
    backend = ScriptedBackend(tiny_tokenizer, lambda p, seed: replies[seed] + ("\n" + gold_reply(p, seed)
                                                                              if seed == 0 else ""), window=100_000)
    result = run(backend, runs=2, limit=1, mode="thinking", model_type="Thinking")
    first = [s for s in result["samples"] if s["bon_idx"] == 1 and not s["secondary_task"].startswith("T4")]
    assert all(s["metric"] == 1.0 and s["reasoning_content"] == "[Answer]\nwrong" for s in first)
    second = [s for s in result["samples"] if s["bon_idx"] == 2]
    assert all(not s["success"] and s["prediction"] == "" for s in second)  # never closed: empty, failed
    assert result["summary"]["fail_samples_num"] == len(second)


def test_small_window_derives_l_and_records_the_deviations(tiny_tokenizer, semsim):
    backend = ScriptedBackend(tiny_tokenizer, gold_reply, window=2048)
    result = runner.run_longbench_pro(backend, runs=1, limit=1, max_new_tokens=16, truncation_tokenizer="model")
    assert result["prompting"]["truncation_length"] == 2032
    assert any("window 2048 - output 16" in d for d in result["deviations"])
    assert any("evaluated model's tokens" in d for d in result["deviations"])
    assert result["prompting"]["sampling_source"] == "default 1.0 (official fallback)"


def test_bad_settings_are_refused(tiny_tokenizer):
    backend = ScriptedBackend(tiny_tokenizer, gold_reply)
    with pytest.raises(ConfigError, match="runs"):
        runner.run_longbench_pro(backend, runs=0)
    with pytest.raises(ConfigError, match="limit"):
        runner.run_longbench_pro(backend, limit=0)
