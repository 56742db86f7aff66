"""run_longbench against fake backends: requests, predictions, scores, official files."""

from __future__ import annotations

import json
import math

import pytest

from jaxeval.benchmarks.longbench import rescore_predictions, run_longbench
from jaxeval.benchmarks.longbench.data import load_config
from jaxeval.benchmarks.longbench.prompts import CHAT_FORMATS, apply_chat_format, build_prompt
from jaxeval.benchmarks.longbench.requests import build_request
from jaxeval.benchmarks.longbench.tasks import DATASETS, E_DATASETS, SHIPPED_SAMPLE, TASKS, config_name
from jaxeval.errors import ConfigError
from jaxeval.generation import resolve_chat_format
from longbench_helpers import EchoBackend, GoldBackend


def test_echo_backend_over_the_whole_sample(tokenizer):
    backend = EchoBackend(tokenizer, "Paragraph 2", max_position_embeddings=2048)
    result = run_longbench(backend, tokenizer, SHIPPED_SAMPLE)
    assert list(result["scores"]) == list(DATASETS)
    assert result["prompting"]["max_length"] == 1548 and result["prompting"]["chat_format"] == "model"
    assert [call["max_new_tokens"] for call in backend.calls] == [TASKS[name].max_new_tokens for name in DATASETS]
    assert [call["stop"] for call in backend.calls] == [None] * len(DATASETS)
    assert [call["min_new_tokens"] for call in backend.calls] == [int(name == "samsum") for name in DATASETS]
    assert result["categories"]["en"]["Avg"] is not None and result["categories"]["zh"]["Avg"] is not None
    first = result["outputs"]["narrativeqa"][0]
    assert first["key"][:3] == ["longbench", "narrativeqa", "test"] and first["pred"] == "Paragraph 2"
    assert result["prompting"]["samsum_stop"].startswith("token ids")


def test_gold_backend_scores_full_marks_where_answers_are_exact(tokenizer):
    answers = {}
    for name in ("qasper", "trec", "passage_count", "passage_retrieval_zh", "lcc", "lsht", "multifieldqa_zh"):
        for record in load_config(SHIPPED_SAMPLE, name):
            request = build_request(record, tokenizer, 100_000, "model", "longbench")
            answers[request.prompt_ids] = record.answers[0]
    datasets = ["qasper", "trec", "passage_count", "passage_retrieval_zh", "lcc", "lsht", "multifieldqa_zh"]
    result = run_longbench(GoldBackend(tokenizer, answers), tokenizer, SHIPPED_SAMPLE, datasets=datasets,
                           max_length=100_000)
    assert result["scores"] == {name: 100.0 for name in DATASETS if name in datasets}


def test_longbench_e_with_limit_and_prediction_files(tokenizer, tmp_path):
    backend = EchoBackend(tokenizer, "\n1995\nmore", extra_tokens=[tokenizer.eos_token_id])
    result = run_longbench(backend, tokenizer, SHIPPED_SAMPLE, datasets=["triviaqa", "samsum"], e=True, limit=2,
                           max_length=400, predictions_dir=tmp_path)
    assert result["benchmark"] == "longbench_e" and set(result["scores"]) == {"triviaqa", "samsum"}
    assert result["samples"]["triviaqa"] == {"0-4k": 2, "4-8k": 0, "8k+": 0}
    assert math.isnan(result["scores"]["samsum"]["8k+"])
    assert backend.calls[1]["stop_token_ids"] is not None and backend.calls[0]["stop_token_ids"] is None
    assert "token ids" in result["prompting"]["samsum_stop"]
    lines = [json.loads(line) for line in (tmp_path / "triviaqa.jsonl").read_text().splitlines()]
    assert [line["pred"] for line in lines] == ["\n1995\nmore"] * 2  # EOS skipped, nothing stripped
    assert set(lines[0]) == {"pred", "answers", "all_classes", "length"}
    rescored = rescore_predictions(tmp_path, e=True, write=False)
    assert json.dumps(rescored["scores"]) == json.dumps(result["scores"])


def test_truncation_is_recorded(tokenizer):
    backend = EchoBackend(tokenizer, "x")
    result = run_longbench(backend, tokenizer, SHIPPED_SAMPLE, datasets=["gov_report", "lcc"], max_length=200)
    assert result["prompting"]["truncated"] == {"gov_report": 3, "lcc": 3}
    assert all(o["raw_prompt_tokens"] > 200 for o in result["outputs"]["gov_report"])
    assert all(o["prompt_tokens"] < 230 for o in result["outputs"]["gov_report"])  # + chat template


def test_run_argument_checks(tokenizer):
    backend = EchoBackend(tokenizer, "x")
    with pytest.raises(ConfigError, match="LongBench-E has no such set"):
        run_longbench(backend, tokenizer, datasets=["narrativeqa"], e=True, max_length=100)
    assert list(run_longbench(backend, tokenizer, datasets="lcc, trec", max_length=300, limit=1)["scores"]) == \
        ["trec", "lcc"]
    with pytest.raises(ConfigError, match="limit"):
        run_longbench(backend, tokenizer, limit=0, max_length=100)
    with pytest.raises(ConfigError, match="max_length"):
        run_longbench(backend, tokenizer, datasets=["qasper"])
    with pytest.raises(ConfigError, match="chat_format"):
        run_longbench(backend, tokenizer, datasets=["qasper"], max_length=100, chat_format="vicuna")


def test_chat_formats(tokenizer, bos_tokenizer):
    task = TASKS["qasper"]
    assert resolve_chat_format("auto", tokenizer, CHAT_FORMATS) == "model"
    assert resolve_chat_format("llama2", bos_tokenizer, CHAT_FORMATS) == "llama2"  # LongBench's own wrappers
    with pytest.raises(ConfigError, match="unknown chat_format 'llama2'; available: auto, model, none"):
        resolve_chat_format("llama2", bos_tokenizer)  # LongBench Pro's formats: the three
    assert resolve_chat_format("auto", bos_tokenizer) == "none"
    with pytest.raises(ConfigError, match="no chat template"):
        resolve_chat_format("model", bos_tokenizer)
    model = apply_chat_format("P", task, tokenizer, "model")
    assert model.text == "<|im_start|>user\nP<|im_end|>\n<|im_start|>assistant\n" and not model.add_special_tokens
    assert apply_chat_format("P", task, bos_tokenizer, "llama2").text == "[INST]P[/INST]"
    assert apply_chat_format("P", task, bos_tokenizer, "internlm").text == "<|User|>:P<eoh>\n<|Bot|>:"
    skipped = apply_chat_format("P", TASKS["lcc"], tokenizer, "model")
    assert skipped.text == "P" and skipped.add_special_tokens and skipped.chat_format == "none"


def test_requests_keys_and_prompt_ids(bos_tokenizer):
    record = load_config(SHIPPED_SAMPLE, config_name("qasper", True))[1]
    request = build_request(record, bos_tokenizer, 10_000, "llama2", "longbench_e")
    assert request.key == ("longbench_e", "qasper_e", "test", 1, record.id)
    assert request.dataset == "qasper" and request.max_new_tokens == 128
    expected = bos_tokenizer("[INST]" + build_prompt(TASKS["qasper"], record) + "[/INST]")["input_ids"]
    assert list(request.prompt_ids) == expected and request.prompt_ids[0] == 0  # BOS added


def test_every_e_dataset_runs(tokenizer):
    result = run_longbench(EchoBackend(tokenizer, "a"), tokenizer, e=True, limit=1, max_length=300)
    assert list(result["scores"]) == list(E_DATASETS)
    assert set(result["bucket_averages"]) == {"0-4k", "4-8k", "8k+"}
