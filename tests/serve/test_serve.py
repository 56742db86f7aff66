"""`jaxeval serve` on loopback with the embedded tiny model, spoken to by the HTTP judge and raw HTTP."""

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import jaxeval
from jaxeval.cli import build_parser
from jaxeval.judges import JudgeReply, make_judge
from jaxeval.judges.chat import chat_prompt_ids
from jaxeval.serve import make_server, server_url

TINY = Path(jaxeval.__file__).parent / "assets" / "tiny_llama"
PROMPTS = ["Is the sky blue? Answer yes or no.", "Question: who wrote it?\nAnswer:", "ok"]


@pytest.fixture(scope="module")
def model():
    return jaxeval.load_model(TINY, dtype="float32")


@pytest.fixture(scope="module")
def server(model):
    srv = make_server(model, port=0)
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def post(url, body, path="/chat/completions", headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def get(url, path):
    try:
        with urllib.request.urlopen(url + path, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def chat(text, **options):
    return {"model": "tiny_llama", "messages": [{"role": "user", "content": text}], **options}


def test_http_judge_against_the_real_server(server, model):
    judge = make_judge(f"http:{server_url(server)}:tiny_llama", max_tokens=6, timeout=60, retries=0)
    first = judge.complete(PROMPTS)
    assert len(first) == 3 and all(isinstance(r, JudgeReply) and isinstance(r.text, str) and r.error is None
                                   for r in first)
    assert judge.complete(PROMPTS) == first  # greedy: deterministic
    summary = judge.summary()
    assert summary["calls"] == 6 and summary["failed"] == 0 and summary["retries"] == 0
    prompt_tokens = [len(chat_prompt_ids(model.tokenizer, [{"role": "user", "content": p}])) for p in PROMPTS]
    assert summary["usage"]["prompt_tokens"] == 2 * sum(prompt_tokens)
    assert 0 < summary["usage"]["completion_tokens"] <= 2 * 3 * 6
    # The server's answers are the engine's own greedy generations on the chat-templated prompt
    # (one prompt at a time, like the server, so no other batch shape is compiled).
    ids = [chat_prompt_ids(model.tokenizer, [{"role": "user", "content": p}]) for p in PROMPTS]
    assert [model.generate([i], 6, batch_size=1)[0].text for i in ids] == [r.text for r in first]


def test_response_shape_usage_and_sampling(server, model):
    url = server_url(server)
    status, body = post(url, chat("hello there", max_tokens=5, temperature=1.5, top_p=0.9, seed=11))
    assert status == 200
    assert body["object"] == "chat.completion" and body["model"] == "tiny_llama" and body["id"].startswith("chatcmpl-")
    [choice] = body["choices"]
    assert choice["index"] == 0 and choice["message"]["role"] == "assistant"
    ids = chat_prompt_ids(model.tokenizer, [{"role": "user", "content": "hello there"}])
    [expected] = model.generate([ids], 5, temperature=1.5, top_p=0.9, seed=11, batch_size=1)
    assert choice["message"]["content"] == expected.text
    assert choice["finish_reason"] == ("length" if expected.finish_reason == "length" else "stop")
    usage = body["usage"]
    assert usage == {"prompt_tokens": len(ids), "completion_tokens": len(expected.tokens),
                     "total_tokens": len(ids) + len(expected.tokens)}
    assert post(url, chat("hello there", max_tokens=5, temperature=1.5, top_p=0.9, seed=11))[1]["choices"] == \
        body["choices"]


def test_stop_strings_and_system_messages(server, model):
    url = server_url(server)
    messages = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "Say something."}]
    status, full = post(url, {"messages": messages, "max_tokens": 8})
    text = full["choices"][0]["message"]["content"]
    assert status == 200 and len(text) >= 4
    stop = text[2:4]
    status, cut = post(url, {"messages": messages, "max_tokens": 8, "stop": [stop, "never-there"]})
    assert status == 200
    assert cut["choices"][0]["message"]["content"] == text[:text.find(stop)]
    assert cut["choices"][0]["finish_reason"] == "stop"
    ids = chat_prompt_ids(model.tokenizer, messages)
    assert cut["usage"]["prompt_tokens"] == len(ids)


def test_models_health_and_routes(server):
    url = server_url(server)
    status, body = get(url, "/models")
    assert status == 200 and [m["id"] for m in body["data"]] == ["tiny_llama"] and body["object"] == "list"
    assert get(url.removesuffix("/v1"), "/health") == (200, {"status": "ok"})
    status, body = get(url, "/nowhere")
    assert status == 404 and "no route" in body["error"]["message"]
    assert get(url, "/chat/completions")[0] == 405


@pytest.mark.parametrize("body, param, needle", [
    (b"{not json", None, "not valid JSON"),
    ([1, 2], None, "JSON object"),
    ({"model": "tiny_llama"}, "messages", "non-empty list"),
    ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0]", "role"),
    ({"messages": [{"role": "user", "content": 3}]}, "messages[0].content", "string"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
     "messages[0].content", "text parts"),
    (chat("x", max_tokens=0), "max_tokens", ">= 1"),
    (chat("x", max_tokens="5"), "max_tokens", "integer"),
    (chat("x", temperature=7), "temperature", "[0.0, 2.0]"),
    (chat("x", top_p=0), "top_p", "> 0"),
    (chat("x", seed=-1), "seed", "2**32"),
    (chat("x", stop=["a", ""]), "stop", "non-empty"),
    (chat("x", n=2), "n", "not supported"),
    (chat("x", stream=True), "stream", "not supported"),
    (chat("x", frequency_penalty=0.5), "frequency_penalty", "not supported"),
    (chat("x", best_of=3), "best_of", "unknown parameter"),
    (chat("x", max_tokens=40000), "messages", "beyond the model's 32768 positions"),
])
def test_bad_requests_get_clear_400s(server, body, param, needle):
    status, reply = post(server_url(server), body)
    assert status == 400
    error = reply["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param and needle in error["message"]


def test_wrong_model_is_404_and_server_keeps_serving(server):
    url = server_url(server)
    status, reply = post(url, chat("x", model="gpt-4o"))
    assert status == 404 and reply["error"]["code"] == "model_not_found" and "tiny_llama" in reply["error"]["message"]
    assert post(url, chat("x", max_tokens=2))[0] == 200
    assert post(url, {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2})[0] == 200  # model optional


def test_concurrent_requests_are_serialised_and_equal_sequential(server):
    url = server_url(server)
    bodies = [chat(f"item {i}", max_tokens=4) for i in range(4)]
    sequential = [post(url, b)[1]["choices"][0]["message"]["content"] for b in bodies]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda b: post(url, b), bodies))
    assert [s for s, _ in parallel] == [200] * 4
    assert [r["choices"][0]["message"]["content"] for _, r in parallel] == sequential


def test_api_key_required_when_configured(model, monkeypatch):
    monkeypatch.setenv("JAXEVAL_TEST_SERVE_KEY", "serve-secret-123")
    srv = make_server(model, port=0, served_name="judge", api_key_env="JAXEVAL_TEST_SERVE_KEY")
    threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
    try:
        url = server_url(srv)
        status, reply = post(url, chat("x", model="judge", max_tokens=2))
        assert status == 401 and reply["error"]["code"] == "invalid_api_key"
        assert "serve-secret-123" not in json.dumps(reply) and "serve-secret-123" not in repr(srv.service)
        status, _ = post(url, chat("x", model="judge", max_tokens=2),
                         headers={"Authorization": "Bearer serve-secret-123"})
        assert status == 200
    finally:
        srv.shutdown()
        srv.server_close()


def test_serve_binds_loopback_by_default():
    args = build_parser().parse_args(["serve", str(TINY), "--port", "0"])
    assert args.host == "127.0.0.1" and args.port == 0


@pytest.mark.slow
def test_cli_serve_subprocess_end_to_end():
    """`jaxeval serve` as a user starts it: prints its URL, answers the HTTP judge, stops on SIGINT."""
    proc = subprocess.Popen([sys.executable, "-m", "jaxeval.cli", "serve", str(TINY), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "JAX_PLATFORMS": "cpu"})
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving 'tiny_llama' at http://127.0.0.1:"), (line, proc.stderr.read())
        url = line.split(" at ")[1].split()[0]
        judge = make_judge(f"http:{url}:tiny_llama", max_tokens=4, timeout=120, retries=0)
        replies = judge.complete(["hello", "world"])
        assert all(r.error is None and isinstance(r.text, str) for r in replies)
        assert judge.complete(["hello", "world"]) == replies
    finally:
        proc.send_signal(2)
        assert proc.wait(timeout=30) == 0
