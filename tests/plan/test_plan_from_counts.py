"""`jaxeval plan` before the data (and the weights) are here: a config.json alone and a data flag
that names nothing local give an estimate from the benchmark's own counts, said so, not a refusal."""

import json

import pytest

from jaxeval.cli import main

LLAMA_3_1_8B = {  # the shape of meta-llama/Llama-3.1-8B-Instruct's config.json
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "bos_token_id": 128000,
    "eos_token_id": [128001, 128008, 128009], "torch_dtype": "bfloat16"}


@pytest.fixture
def config_only(tmp_path, monkeypatch):
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    folder = tmp_path / "llama-3.1-8b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_3_1_8B))
    return folder


def plan(tmp_path, capsys, *flags):
    out = tmp_path / "plan.json"
    assert main(["plan", "--accelerator", "v5p", "--dtype", "bfloat16", "--plan_json", str(out), *flags]) == 0
    return json.loads(out.read_text()), capsys.readouterr().out


def test_an_8b_at_128k_from_a_config_json_and_helmet_configs_alone(tmp_path, capsys, config_only):
    found, printed = plan(tmp_path, capsys, "--model", str(config_only), "--tasks", "helmet", "--helmet_lengths",
                          "128k", "--helmet_data", str(tmp_path / "not_downloaded"), "--helmet_judge",
                          "http:http://127.0.0.1:9/v1:gpt-4o", "--judge_price", "2.5,10")
    assert "helmet: estimated from the benchmark's item counts" in printed and "not from the data" in printed
    assert "HELMET's configs" in found["estimated_from_counts"]["helmet"] and found["tokenizer_proxy"]
    assert len(found["items"]) == 21 and found["items"]["helmet/json_kv/128k"] == 100
    assert found["items"]["helmet/icl_nlu_8296shot_balance/128k"] == 500
    assert set(found["tokens"]["helmet"]) == {"<=128k"}  # every prompt fills the 128k tier
    # each prompt: input_max_length less its generation budget (json_kv: 131072 - 100)
    assert found["totals"]["prompt_tokens"] == sum(
        (131072 - gen) * n for gen, n in ((50, 100), (100, 100), (50, 100), (100, 100), (20, 400), (200, 100),
                                          (300, 200), (100, 100), (10, 200), (1200, 100), (400, 100), (20, 2500)))
    assert found["memory"]["fits"] is False and found["memory"]["would_fit"]["chips"] > 1
    assert found["time"]["chip_hours"] > 0
    judge = found["judge"]  # LongQA one prompt per item, the two summaries three each
    assert judge["calls"] == 100 + 3 * 200 and judge["price_usd_max"] > 0


def test_longbench_from_the_card_when_its_folder_is_missing(tmp_path, capsys, config_only):
    found, printed = plan(tmp_path, capsys, "--model", str(config_only), "--tasks", "longbench,longbench_e",
                          "--longbench_data", "/nonexistent/longbench", "--limit", "10")
    assert "LongBench's card" in found["estimated_from_counts"]["longbench"]
    assert "/nonexistent/longbench: no such folder" in found["estimated_from_counts"]["longbench"]
    assert found["items"]["longbench/narrativeqa"] == 10 and found["items"]["longbench/lcc"] == 10
    assert found["items"]["longbench_e/qasper/8k+"] == 10 and len(found["items"]) == 21 + 13 * 3
    assert "note: longbench_e: estimated from" in printed


def test_a_present_but_broken_data_folder_is_still_an_error(tmp_path, capsys, config_only):
    broken = tmp_path / "helmet"
    broken.mkdir()
    assert main(["plan", "--model", str(config_only), "--tasks", "helmet", "--helmet_data", str(broken),
                 "--accelerator", "v5p"]) == 2
    assert "HELMET data file not found" in capsys.readouterr().err


def test_judge_price_example_of_the_docs(tmp_path, capsys, monkeypatch):
    """docs/running.md's `plan ... --judge_price`, with an HTTP judge (never called by a plan)."""
    monkeypatch.setenv("JAXEVAL_PROGRESS", "0")
    found, printed = plan(tmp_path, capsys, "--tasks", "helmet", "--limit", "1", "--helmet_categories", "longqa",
                          "--helmet_judge", "http:http://127.0.0.1:9/v1:gpt-4o", "--judge_price", "2.5,10")
    assert found["judge"]["calls"] == 1 and found["judge"]["price_usd_max"] > 0 and "judge: 1 calls" in printed
    assert found["estimated_from_counts"] == {}


def test_a_hub_id_that_cannot_be_fetched_is_estimated_too(tmp_path, capsys, config_only, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1, no network
    found, _ = plan(tmp_path, capsys, "--model", str(config_only), "--tasks", "longbench", "--longbench_data",
                    "THUDM/LongBench", "--longbench_datasets", "qasper,lcc")
    assert "THUDM/LongBench: could not fetch" in found["estimated_from_counts"]["longbench"]
    assert found["items"] == {"longbench/qasper": 200, "longbench/lcc": 500}
