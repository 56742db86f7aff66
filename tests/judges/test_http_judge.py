"""The HTTP judge against misbehaving loopback servers: every failure is a counted reply, never a 0."""

import json
import logging

import pytest

from jaxeval.errors import ConfigError
from jaxeval.judges import Judge, JudgeReply, judge_record, make_judge
from jaxeval.judges.http import HttpJudge

GOOD = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}
SECRET = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"


def answer(payload, status=200, headers=None):
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return lambda server, handler: (status, body, {"Content-Type": "application/json", **(headers or {})})


def judge_for(url, **options):
    waits = []
    options = {"timeout": 2.0, "retries": 2, "backoff": 0.05, "jitter": 0.5, "sleep": waits.append, **options}
    return HttpJudge(url, "judge-model", **options), waits


def test_good_answer_and_request_body(fake_server):
    server = fake_server(answer(GOOD))
    judge, waits = judge_for(server.url, system="be fair", temperature=0.1, top_p=0.9, max_tokens=77,
                             request_seed=3)
    assert isinstance(judge, Judge)
    assert judge.complete(["Q1", "Q2"]) == [JudgeReply("yes", None), JudgeReply("yes", None)]
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/chat/completions"
    assert body == {"model": "judge-model", "temperature": 0.1, "top_p": 0.9, "max_tokens": 77, "n": 1, "seed": 3,
                    "messages": [{"role": "system", "content": "be fair"}, {"role": "user", "content": "Q1"}]}
    assert server.requests[1]["body"]["messages"][-1]["content"] == "Q2"
    summary = judge.summary()
    assert summary["calls"] == 2 and summary["failed"] == 0 and summary["retries"] == 0 and waits == []
    assert summary["usage"] == {"prompt_tokens": 10, "completion_tokens": 2}
    assert judge_record(judge) == {"settings": judge.settings(), "summary": summary}


def test_timeout_is_retried_then_counted(fake_server):
    def slow(server, handler):
        server.release.wait(5.0)  # far past the judge's timeout; ends at teardown
        return 200, json.dumps(GOOD).encode(), {}

    server = fake_server(slow)
    judge, waits = judge_for(server.url, timeout=0.3, retries=2)
    [reply] = judge.complete(["Q"])
    assert reply.text is None and reply.error.startswith("timeout")
    assert len(server.requests) == 3 and len(waits) == 2
    summary = judge.summary()
    assert summary["failures_by_kind"] == {"timeout": 1} and summary["retries_by_kind"] == {"timeout": 2}


@pytest.mark.parametrize("behaviour, kind", [
    (answer({"error": {"message": "boom"}}, status=500), "http_500"),
    (answer(b"<html>502 Bad Gateway</html>"), "not_json"),
    (answer(b"\xff\xfe not utf-8"), "not_json"),
    (answer({"object": "chat.completion", "model": "x"}), "no_content"),
    (answer({"choices": []}), "no_content"),
    (answer({"choices": [{"message": {"role": "assistant", "content": None}}]}), "no_content"),
    (answer([1, 2, 3]), "no_content"),
])
def test_each_failure_kind_is_retried_and_counted(fake_server, behaviour, kind):
    server = fake_server(behaviour)
    judge, waits = judge_for(server.url, retries=2)
    replies = judge.complete(["Q1", "Q2"])
    assert [r.text for r in replies] == [None, None]
    assert all(r.error.startswith(kind) for r in replies)
    assert len(server.requests) == 6 and len(waits) == 4
    summary = judge.summary()
    assert summary["calls"] == 2 and summary["failed"] == 2
    assert summary["failures_by_kind"] == {kind: 2} and summary["retries_by_kind"] == {kind: 4}


def test_non_http_peer_and_refused_connection(fake_server, refused_url):
    def not_http(server, handler):
        handler.wfile.write(b"SSH-2.0-OpenSSH_9.6 this is not HTTP\r\n\r\n")
        handler.close_connection = True

    judge, _ = judge_for(fake_server(not_http).url, retries=1)
    [reply] = judge.complete(["Q"])
    assert reply.text is None and reply.error.startswith("protocol")
    judge, waits = judge_for(refused_url, retries=1)
    [reply] = judge.complete(["Q"])
    assert reply.text is None and reply.error.startswith("connection") and len(waits) == 1
    assert judge.summary()["failures_by_kind"] == {"connection": 1}


def test_client_errors_are_not_retried(fake_server):
    server = fake_server(answer({"error": {"message": "bad model"}}, status=404))
    judge, waits = judge_for(server.url, retries=3)
    [reply] = judge.complete(["Q"])
    assert reply.text is None and "HTTP 404" in reply.error and "bad model" in reply.error
    assert len(server.requests) == 1 and waits == []
    assert judge.summary()["failures_by_kind"] == {"http_404": 1}


def test_redirects_are_refused_so_the_key_stays_put(fake_server, monkeypatch):
    monkeypatch.setenv("JAXEVAL_TEST_JUDGE_KEY", SECRET)
    elsewhere = fake_server(answer(GOOD))
    server = fake_server(lambda s, h: (307, b"", {"Location": elsewhere.url + "/chat/completions"}))
    judge, waits = judge_for(server.url, api_key_env="JAXEVAL_TEST_JUDGE_KEY", retries=2)
    [reply] = judge.complete(["Q"])
    assert reply.text is None and reply.error.startswith("http_307")
    assert len(server.requests) == 1 and elsewhere.requests == [] and waits == []


def test_recovers_after_transient_failures_honouring_retry_after(fake_server):
    def flaky(server, handler):
        if len(server.requests) <= 2:
            return 503, b'{"error": "overloaded"}', {"Retry-After": "0.7"}
        return 200, json.dumps(GOOD).encode(), {}

    server = fake_server(flaky)
    judge, waits = judge_for(server.url, retries=3, backoff=0.01, max_backoff=5.0)
    assert judge.complete(["Q"]) == [JudgeReply("yes", None)]
    assert len(server.requests) == 3 and len(waits) == 2 and all(0.7 <= w <= 0.7 * 1.5 for w in waits)
    summary = judge.summary()
    assert summary["failed"] == 0 and summary["retries_by_kind"] == {"http_503": 2}


def test_backoff_is_exponential_capped_and_reproducible(fake_server):
    server = fake_server(answer({}, status=500))
    runs = []
    for seed in (7, 7, 8):
        judge, waits = judge_for(server.url, retries=4, backoff=0.1, max_backoff=0.5, jitter=0.5, seed=seed)
        judge.complete(["Q"])
        runs.append(waits)
    assert runs[0] == runs[1] != runs[2]
    for waits in runs:
        assert len(waits) == 4
        for attempt, wait in enumerate(waits):
            base = min(0.5, 0.1 * 2 ** attempt)
            assert base <= wait <= base * 1.5


@pytest.mark.parametrize("concurrency", [1, 3])
def test_mixed_batch_keeps_prompt_order(fake_server, concurrency):
    def by_prompt(server, handler):
        prompt = server.requests[-1]["body"]["messages"][-1]["content"]
        if prompt == "fail":
            return 500, b"{}", {}
        if prompt == "garbage":
            return 200, b"not json at all", {}
        return 200, json.dumps({"choices": [{"message": {"content": prompt.upper()}}]}).encode(), {}

    server = fake_server(by_prompt)
    judge, _ = judge_for(server.url, retries=1, concurrency=concurrency)
    prompts = ["a", "fail", "b", "garbage", "c"]
    replies = judge.complete(prompts)
    assert [r.text for r in replies] == ["A", None, "B", None, "C"]
    assert [r.error is None for r in replies] == [True, False, True, False, True]
    summary = judge.summary()
    assert summary["calls"] == 5 and summary["failures_by_kind"] == {"http_500": 1, "not_json": 1}
    assert summary["retries_by_kind"] == {"http_500": 1, "not_json": 1}


def test_api_key_is_sent_but_never_leaked(fake_server, monkeypatch, caplog):
    monkeypatch.setenv("JAXEVAL_TEST_JUDGE_KEY", SECRET)

    def echo_auth(server, handler):  # a hostile server that echoes the key back in its error body
        return 500, json.dumps({"error": handler.headers.get("Authorization")}).encode(), {}

    server = fake_server(echo_auth)
    caplog.set_level(logging.DEBUG)
    judge, _ = judge_for(server.url, api_key_env="JAXEVAL_TEST_JUDGE_KEY", retries=1)
    [reply] = judge.complete(["Q"])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert reply.text is None and "http_500" in reply.error and "***" in reply.error
    assert "judge request" in caplog.text  # the failure was logged ...
    for text in (reply.error, repr(judge), str(judge), json.dumps(judge.settings()), json.dumps(judge.summary()),
                 caplog.text, repr(vars(judge))):
        assert SECRET not in text  # ... without the key
    assert judge.settings()["api_key_env"] == "JAXEVAL_TEST_JUDGE_KEY"


def test_no_key_means_no_authorization_header(fake_server, monkeypatch):
    monkeypatch.delenv("JAXEVAL_TEST_JUDGE_KEY", raising=False)
    server = fake_server(answer(GOOD))
    judge, _ = judge_for(server.url, api_key_env="JAXEVAL_TEST_JUDGE_KEY")
    assert judge.complete(["Q"])[0].text == "yes"
    assert "Authorization" not in server.requests[0]["headers"]


def test_make_judge_parses_http_specs():
    judge = make_judge("http:http://127.0.0.1:8000/v1:Qwen/Qwen3-8B", timeout=5.0)
    assert isinstance(judge, HttpJudge) and judge.model == "Qwen/Qwen3-8B"
    assert judge.url == "http://127.0.0.1:8000/v1/chat/completions" and judge.timeout == 5.0
    assert make_judge("http:https://api.openai.com/v1:gpt-4o-2024-05-13").model == "gpt-4o-2024-05-13"
    for bad in ("http:http://127.0.0.1:8000/v1", "http:gpt-4o", "openai:gpt-4o", "local:", "http:ftp://x:m"):
        with pytest.raises(ConfigError, match="expected"):
            make_judge(bad)


@pytest.mark.parametrize("options, message", [
    ({"base_url": "ftp://host/v1"}, "expected http"),
    ({"base_url": "http://user:pw@host/v1"}, "credentials"),
    ({"api_key_env": "sk-abc def"}, "variable NAME"),
    ({"timeout": 0}, "timeout"),
    ({"retries": -1}, "retries"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"concurrency": 0}, "concurrency"),
])
def test_bad_settings_raise_config_errors(options, message):
    options = {"base_url": "http://127.0.0.1:1/v1", "model": "m", **options}
    with pytest.raises(ConfigError, match=message):
        HttpJudge(**options)
