"""A judged HELMET run through `jaxeval run` to its overall score: every dataset of the seven
categories (tests/benchmarks/helmet/full_data.py), the LongQA / summarisation judge and the ALCE
NLI judge behind a scripted OpenAI-compatible server on 127.0.0.1; and the embedded model as a
local judge, whose replies never parse: counted as missing, never scored."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest
from full_data import judge_reply, write_full_data
from helmet_helpers import TINY, FakeModel

from jaxeval.cli import main
from jaxeval.judges.options import JUDGE_FAILURE_EXIT



def _judges_fake_server():
    """tests/judges' loopback server (its conftest, loaded under its own name)."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "judges" / "conftest.py"
    spec = importlib.util.spec_from_file_location("judges_fake_server", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FakeServer


FakeServer = _judges_fake_server()


class StandIn(FakeModel):
    """The run flow's model: the embedded tokenizer, one scripted reply (with citations) per prompt."""
    dtype, fingerprint, attention = "float32", "c" * 16, "none"

    def __init__(self, tokenizer):
        super().__init__(tokenizer, "Ada Lovelace wrote the first program [1]. Ada also wrote notes [2].")
        self.path = "stand-in"
        self.config = types.SimpleNamespace(model_type="stand-in", context_limit=131072)
        self.stats = {"reads": 0, "tokens": 0}
        self.max_length = 131072


@pytest.fixture
def judge_server():
    def behave(server, handler):
        prompt = server.requests[-1]["body"]["messages"][-1]["content"]
        return 200, json.dumps({"choices": [{"message": {"content": judge_reply(prompt)}}]}).encode(), {}
    server = FakeServer(behave)
    yield server
    server.close()


def run_flags(tmp_path, data) -> list[str]:
    return ["run", "--tasks", "helmet", "--limit", "1", "--helmet_data", str(data), "--helmet_lengths", "8k",
            "--out", str(tmp_path / "r.json"), "--output_path", str(tmp_path)]


def test_http_judged_run_reaches_the_overall_score(tmp_path, tokenizer, judge_server, monkeypatch, capsys):
    from jaxeval import cli

    monkeypatch.setattr(cli, "_load", lambda args: StandIn(tokenizer))
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    data = write_full_data(tmp_path / "helmet")
    url = judge_server.url
    assert main([*run_flags(tmp_path, data), "--helmet_judge", f"http:{url}:judge-model",
                 "--helmet_nli_judge", f"http:{url}:t5-true"]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    groups = results["groups"]["helmet"]
    # LongQA judge: fluency 1 x correctness 2 = 2 of 3; summaries: R 1/2, P 1/2 -> F1 0.5; every
    # citation entailed -> citation recall and precision 100
    assert results["results"]["helmet/narrativeqa_7892/8k"]["gpt4_score"] == pytest.approx(200 / 3)
    assert results["results"]["helmet/multi_lexsum_7492/8k"]["gpt4_f1"] == pytest.approx(50.0)
    assert results["results"]["helmet/alce_asqa_30/8k"]["citation_rec"] == pytest.approx(100.0)
    categories = [groups[f"8k/{c}"] for c in ("recall", "rag", "icl", "cite", "rerank", "longqa", "summ")]
    assert None not in categories and groups["8k/overall"] == pytest.approx(sum(categories) / 7)
    section = results["details"]["helmet"]
    assert section["judged"]["missing"] == 0 and section["judged"]["judgements"] > 0
    assert section["judge_calls"]["calls"] == 1 + 3 + 3  # narrativeqa, two summaries x three prompts
    assert section["nli_judge_calls"]["calls"] > 0 and section["nli_judge_calls"]["failed"] == 0
    assert all(r["body"]["model"] in ("judge-model", "t5-true") for r in judge_server.requests)
    assert "overall=" in capsys.readouterr().out


@pytest.mark.slow
def test_local_judge_that_never_parses_is_counted_not_scored(tmp_path, tokenizer, monkeypatch, capsys):
    """The embedded tiny model as the judge: its replies hold no rubric JSON, so every LongQA
    judgement is missing (exit 3 after the results are written), the judged score is null, not 0."""
    from jaxeval import cli

    monkeypatch.setattr(cli, "_load", lambda args: StandIn(tokenizer))
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    data = write_full_data(tmp_path / "helmet")
    code = main([*run_flags(tmp_path, data), "--helmet_categories", "longqa", "--helmet_judge", f"local:{TINY}",
                 "--helmet_judge_max_tokens", "16"])
    assert code == JUDGE_FAILURE_EXIT
    assert "judge: 1 of 1 judgements missing (unparseable 1)" in capsys.readouterr().out
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["results"]["helmet/narrativeqa_7892/8k"].get("gpt4_score") is None
    assert results["groups"]["helmet"]["8k/longqa"] is None and results["groups"]["helmet"]["8k/overall"] is None


@pytest.mark.slow
def test_the_embedded_model_reaches_the_overall_score_with_an_http_judge(tmp_path, judge_server, monkeypatch):
    """The same run on the real embedded model (about a minute here)."""
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    data = write_full_data(tmp_path / "helmet")
    assert main([*run_flags(tmp_path, data), "--helmet_judge", f"http:{judge_server.url}:judge",
                 "--helmet_nli_judge", f"http:{judge_server.url}:nli"]) == 0
    groups = json.loads((tmp_path / "r.json").read_text())["groups"]["helmet"]
    assert isinstance(groups["8k/overall"], float) and groups["8k/summ"] == pytest.approx(50.0)
