"""A faulty judge fails the run: timeouts, refused connections, 5xx, 429 and garbage are counted
by kind in the table and the results, and more missing judgements than --judge_max_failures
allows give exit status 3 after the results are written (`score` and `run` alike)."""

from __future__ import annotations

import json

import pytest

from jaxeval.cli import main
from jaxeval.judges.options import JUDGE_FAILURE_EXIT

YES = {"choices": [{"message": {"role": "assistant", "content": "yes"}}]}  # a reply, but no rubric JSON
LONGQA_REPLY = {"choices": [{"message": {"content": 'ok {"fluency": 1, "correctness": 2}'}}]}


def predictions(tmp_path, n: int = 2):
    items = [{"question": f"Who {i}?", "answer": ["Ada"], "output": "Ada"} for i in range(n)]
    path = tmp_path / "narrativeqa_out.json"
    path.write_text(json.dumps({"args": {"datasets": "narrativeqa_7892", "input_max_length": 8192}, "data": items,
                                "averaged_metrics": {}}))
    return path


def score(tmp_path, url: str, *flags: str) -> int:
    return main(["score", "--benchmark", "helmet", "--predictions", str(predictions(tmp_path)), "--output_path",
                 str(tmp_path / "out"), "--helmet_judge", f"http:{url}:judge-model", "--judge_timeout", "0.5",
                 "--judge_retries", "0", *flags])


def reply(status: int, body: bytes, headers=None):
    return lambda server, handler: (status, body, {"Content-Type": "application/json", **(headers or {})})


def hang(server, handler):
    server.release.wait(10)  # accepts, never answers in time
    return 200, json.dumps(YES).encode(), {}


@pytest.mark.parametrize("behaviour, kind", [
    (hang, "timeout"), (reply(503, b'{"error": "busy"}'), "http_503"),
    (reply(429, b"{}", {"Retry-After": "0"}), "http_429"), (reply(200, b"\x00garbage"), "not_json"),
    (reply(200, json.dumps(YES).encode()), "unparseable"),
])
def test_every_kind_of_failure_is_counted_and_fails_the_command(fake_server, tmp_path, capsys, monkeypatch,
                                                                 behaviour, kind):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "1")
    server = fake_server(behaviour)
    assert score(tmp_path, server.url) == JUDGE_FAILURE_EXIT
    printed = capsys.readouterr()
    assert f"judge: 2 of 2 judgements missing ({kind} 2)" in printed.out
    assert "narrativeqa_7892 judge:" in printed.err and "/2 [" in printed.err  # the judge pass's progress bar
    assert printed.err.splitlines()[-1].startswith("jaxeval: error: helmet: 2 of 2 judgements missing")
    assert "Traceback" not in printed.err
    saved = json.loads((tmp_path / "out" / "helmet_rescored.json").read_text())  # written before failing
    assert saved["judged"] == {"judgements": 2, "missing": 2, "missing_by_kind": {kind: 2}}


def test_refused_connection_is_counted(tmp_path, capsys, refused_url):
    assert score(tmp_path, refused_url) == JUDGE_FAILURE_EXIT
    assert "judge: 2 of 2 judgements missing (connection 2)" in capsys.readouterr().out


def test_retries_are_spent_before_a_judgement_is_missing(fake_server, tmp_path, capsys):
    calls = []

    def flaky(server, handler):  # each prompt's first attempt fails
        calls.append(1)
        return (500, b"{}", {}) if len(calls) % 2 else (200, json.dumps(LONGQA_REPLY).encode(), {})
    server = fake_server(flaky)
    assert score(tmp_path, server.url, "--judge_retries", "1") == 0
    saved = json.loads((tmp_path / "out" / "helmet_rescored.json").read_text())
    assert saved["judged"]["missing"] == 0 and saved["judge_calls"]["retries_by_kind"] == {"http_500": 2}
    assert saved["judge"]["timeout_s"] == 0.5 and saved["judge"]["retries"] == 1


def test_the_allowed_fraction_of_missing_judgements(fake_server, tmp_path, capsys):
    def every_other(server, handler):
        return (500, b"{}", {}) if len(server.requests) % 2 else (200, json.dumps(LONGQA_REPLY).encode(), {})
    server = fake_server(every_other)
    assert score(tmp_path, server.url) == JUDGE_FAILURE_EXIT
    assert "1 of 2 judgements missing (http_500 1)" in capsys.readouterr().out
    assert score(tmp_path, server.url, "--judge_max_failures", "0.5") == 0
