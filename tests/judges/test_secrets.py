"""No judge API key in any output: servers that echo it whole, cut or straddling every length
limit; the errors, logs, printed lines and files of a `jaxeval score` judge pass."""

from __future__ import annotations

import json
import logging

import pytest

from jaxeval import secrets
from jaxeval.cli import main
from jaxeval.judges.http import HttpJudge

KEY = "sk-proj-Zq8Vt3Lm0Xw7Rb2Ny5Hc9Jd4Kf6Gs1Pa"


def leaked(text: str, key: str = KEY) -> list[str]:
    """Every substring of key of 4 or more characters found in text."""
    return sorted({key[i:i + 4] for i in range(len(key) - 3) if key[i:i + 4] in text})


@pytest.fixture(autouse=True)
def fresh_secrets(monkeypatch):
    secrets.forget_all()
    monkeypatch.setenv("JUDGE_KEY", KEY)
    yield
    secrets.forget_all()


def echo(status: int, body_for):
    """A server answering each request with body_for(request number) (str) and status."""
    def behaviour(server, handler):
        return status, body_for(len(server.requests) - 1).encode(), {"Content-Type": "application/json"}
    return behaviour


def test_scrub_masks_the_key_whole_cut_and_in_fragments():
    secrets.register(KEY)
    assert secrets.scrub(f"bad key {KEY}!") == "bad key ***!"
    assert leaked(secrets.scrub(f"shown: {KEY[:3]}...{KEY[-4:]} and {KEY[5:17]}")) == []
    assert secrets.scrub("an ordinary message, nothing of the key") == "an ordinary message, nothing of the key"
    assert secrets.redact(f"x{KEY}y and {KEY[:10]}") == f"x***y and {KEY[:10]}"  # files: whole keys only


def test_error_bodies_of_every_length_never_show_the_key(fake_server, caplog):
    """The key at every offset around the 200-character preview limit, and cut to every length."""
    bodies = ["x" * n + KEY + "y" * 30 for n in range(0, 260)]
    bodies += [KEY[:n] for n in range(4, len(KEY) + 1)] + [KEY[-n:] for n in range(4, len(KEY) + 1)]
    server = fake_server(echo(401, lambda i: bodies[i]))
    judge = HttpJudge(server.url, "m", api_key_env="JUDGE_KEY", retries=0, timeout=5.0)
    with caplog.at_level(logging.DEBUG, logger="jaxeval"):
        replies = judge.complete([f"q{i}" for i in range(len(bodies))])
    assert len(server.requests) == len(bodies)
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"  # it was sent, and echoed
    assert all(r.text is None and r.error.startswith("http_401") for r in replies)
    assert any("xxxx" in r.error for r in replies) and any("***" in r.error for r in replies)
    assert leaked("\n".join(r.error for r in replies)) == []
    assert len(caplog.records) == len(bodies) and leaked(caplog.text) == []


@pytest.mark.parametrize("status, body", [
    (500, "upstream says: " + KEY),  # retried: the retry log lines too
    (200, "<html>" + "z" * 190 + KEY + "</html>"),  # not JSON: its preview
    (200, json.dumps({"choices": [{"message": {"content": "the key is " + KEY}}]})),  # a reply that echoes it
])
def test_retried_unparsed_and_answered_bodies_never_show_the_key(fake_server, caplog, status, body):
    server = fake_server(echo(status, lambda i: body))
    judge = HttpJudge(server.url, "m", api_key_env="JUDGE_KEY", retries=2, backoff=0.0, jitter=0.0,
                      sleep=lambda s: None)
    with caplog.at_level(logging.DEBUG, logger="jaxeval"):
        [reply] = judge.complete(["q"])
    assert leaked(f"{reply.text} {reply.error}") == [] and leaked(caplog.text) == []
    assert (reply.text or reply.error)  # something came back, scrubbed


def test_score_judge_pass_against_an_echoing_server_writes_and_prints_no_key(fake_server, tmp_path, capsys,
                                                                              caplog):
    """The whole `jaxeval score` path: replies, failures, table, results file, stderr."""
    bodies = ["e" * n + KEY for n in range(180, 215)]
    server = fake_server(echo(403, lambda i: bodies[i % len(bodies)]))
    items = [{"question": f"Who {i}?", "answer": ["Ada"], "output": "Ada"} for i in range(len(bodies))]
    predictions = tmp_path / "narrativeqa_out.json"
    predictions.write_text(json.dumps({"args": {"datasets": "narrativeqa_7892", "input_max_length": 8192},
                                       "data": items, "averaged_metrics": {}}))
    out = tmp_path / "scored"
    with caplog.at_level(logging.DEBUG, logger="jaxeval"):
        code = main(["score", "--benchmark", "helmet", "--predictions", str(predictions), "--output_path", str(out),
                     "--helmet_judge", f"http:{server.url}:judge-model", "--helmet_judge_key_env", "JUDGE_KEY"])
    printed = capsys.readouterr()
    written = "".join(path.read_text() for path in out.rglob("*") if path.is_file())
    assert len(server.requests) == len(bodies) and "e" * 150 in written  # the bodies reached the file
    assert leaked(printed.out + printed.err + caplog.text + written) == []
    assert code == 3 and f"judge: {len(bodies)} of {len(bodies)} judgements missing (http_403 {len(bodies)})" in printed.out
