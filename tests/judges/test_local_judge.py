"""The local judge on the embedded tiny model: chat template, determinism, counted failures."""

import dataclasses
from pathlib import Path

import pytest

import jaxeval
from jaxeval.errors import ConfigError
from jaxeval.judges import Judge, JudgeReply, make_judge
from jaxeval.judges.chat import chat_prompt_ids
from jaxeval.judges.local import LocalJudge

TINY = Path(jaxeval.__file__).parent / "assets" / "tiny_llama"


@pytest.fixture(scope="module")
def model():
    return jaxeval.load_model(TINY, dtype="float32")


def test_replies_are_the_models_chat_generations(model):
    judge = LocalJudge(model, max_tokens=5, batch_size=1, system="Answer yes or no.")
    assert isinstance(judge, Judge)
    prompts = ["Is water wet?", "Is fire cold?"]
    replies = judge.complete(prompts)
    assert judge.complete(prompts) == replies  # greedy: deterministic
    for prompt, reply in zip(prompts, replies):
        ids = chat_prompt_ids(model.tokenizer, [{"role": "system", "content": "Answer yes or no."},
                                                {"role": "user", "content": prompt}])
        assert reply == JudgeReply(model.generate([ids], 5, batch_size=1)[0].text, None)
    summary = judge.summary()
    assert summary["calls"] == 4 and summary["failed"] == 0
    assert 0 < summary["usage"]["completion_tokens"] <= 4 * 5
    settings = judge.settings()
    assert settings["backend"] == "local" and settings["fingerprint"] == model.fingerprint
    assert settings["max_tokens"] == 5 and settings["system"] == "Answer yes or no."


def test_a_prompt_too_long_fails_alone_and_is_counted(model):
    short = "yes?"
    short_len = len(chat_prompt_ids(model.tokenizer, [{"role": "user", "content": short}]))
    # The same model, seen with room for exactly the short prompt and 4 new tokens.
    judge = LocalJudge(_Limited(model, short_len + 4), max_tokens=4, batch_size=1)
    replies = judge.complete([short, short + " and a much longer question here", short])
    assert replies[0] == replies[2] and replies[0].error is None and isinstance(replies[0].text, str)
    assert replies[1].text is None and replies[1].error.startswith("too_long")
    summary = judge.summary()
    assert summary["calls"] == 3 and summary["failures_by_kind"] == {"too_long": 1}


class _Limited:
    """A Model whose position limit looks smaller (generation still runs on the real one)."""

    def __init__(self, model, limit):
        self._model = model
        self.config = dataclasses.replace(model.config, max_position_embeddings=limit)

    def __getattr__(self, name):
        return getattr(self._model, name)


def test_make_judge_local_and_config_errors(model):
    judge = make_judge(f"local:{TINY}", max_tokens=3)
    assert isinstance(judge, LocalJudge) and judge.settings()["model"] == str(TINY)
    with pytest.raises(ConfigError, match="max_tokens"):
        LocalJudge(model, max_tokens=0)
    with pytest.raises(ConfigError, match="top_p"):
        LocalJudge(model, top_p=0)
    no_tokenizer = dataclasses.replace(model, tokenizer=None)
    with pytest.raises(ConfigError, match="chat template"):
        LocalJudge(no_tokenizer)
