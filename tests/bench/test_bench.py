"""`jaxeval bench` on the embedded tiny model's shape at toy lengths: the JSON's structure and its
internal consistency (FLOPs against a hand count, ratios against the times), never timings."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re

import numpy as np

import pytest

from jaxeval.bench.report import rules_entry
from jaxeval.bench.shapes import SHAPES
from jaxeval.plan.flops import attended_keys, read_flops
from jaxeval.cli import main
from jaxeval.models.config import config_from_hf

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_read_flops_by_hand():
    c = config_from_hf(SHAPES["llama-8b"][0])
    # Llama-3-8B: 6.98e9 weights outside the embedding and head, 2 FLOPs each per token
    assert abs(read_flops(c, 1, 0)["trunk"] - 2 * 6.98e9) / (2 * 6.98e9) < 0.01
    # causal attention over 4 tokens: queries see 1 + 2 + 3 + 4 = 10 keys; QK^T and PV, 2 FLOPs per multiply-add
    assert read_flops(c, 4, 0)["attention"] == 32 * 32 * 10 * 128 * 2 * 2
    assert read_flops(c, 2, 5)["head"] == 2 * 5 * 4096 * 128256  # the LM head at the 5 read rows only
    f = read_flops(c, 32768, 32767)
    assert f["total"] == f["trunk"] + f["attention"] + f["head"] == pytest.approx(7.7e14, rel=0.03)  # jax_anchors §7
    # a sliding window of 2 over 5 tokens: 1 + 2 + 2 + 2 + 2 keys
    assert attended_keys(5, 2) == 9 and attended_keys(5, 0) == attended_keys(5, 8) == 15


def _used_weights(config) -> int:
    """Per token: every stacked layer matmul weight (3+ dims: stack, in, out...) once, an expert
    tensor [L, E, ...] at top_k / E of its size, from the parameter table itself."""
    from jaxeval.models.param_layout import param_shapes

    total = 0
    for name, stack in param_shapes(config).items():
        for part, shape in (stack.items() if name.endswith("layers") else ()):
            if len(shape) >= 3 or part == "shared_router":  # Qwen3.5-MoE's shared-expert gate [L, D] -> 1
                size = int(np.prod(shape))
                experts = config.moe is not None and shape[1] == config.moe.num_experts and part != "router"
                total += size * config.moe.top_k // config.moe.num_experts if experts else size
    return total


@pytest.mark.parametrize("model_type", ["qwen3_5_text", "qwen3_moe", "qwen3_5_moe_text", "deepseek_v3"])
def test_read_flops_count_the_weights_a_token_uses(model_type):
    """Gated DeltaNet hybrids, mixtures of experts (with shared experts, dense first layers) and latent
    attention: the trunk is 2 FLOPs per weight a token uses, against an independent count over the
    parameter table (experts at k of E)."""
    import sys
    from pathlib import Path

    models_tests = str(Path(__file__).resolve().parents[1] / "models")
    if models_tests not in sys.path:  # their own helpers (moe_checks), found there when run alone too
        sys.path.insert(0, models_tests)
    from tests.models.test_deepseek_v3 import CONFIG as DEEPSEEK
    from tests.models.test_qwen3_5 import CONFIG as HYBRID
    from tests.models.test_qwen3_moe import CONFIG as MOE

    HYBRID_MOE = {**{k: v for k, v in HYBRID.items() if k != "intermediate_size"}, "num_experts": 8,
                  "num_experts_per_tok": 2, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48}
    raw = {"qwen3_5_text": HYBRID, "qwen3_moe": MOE, "qwen3_5_moe_text": HYBRID_MOE, "deepseek_v3": DEEPSEEK}
    c = config_from_hf({**raw[model_type], "model_type": model_type})
    f = read_flops(c, 100, 0)
    assert f["trunk"] == 2 * 100 * _used_weights(c)
    if model_type == "qwen3_5_text":  # 2 full layers' causal attention + 4 GDN layers' 3 dk x dv products
        g = c.linear_attention
        assert f["attention"] == 2 * 4 * c.num_heads * c.head_dim * attended_keys(100, 0) + \
            4 * 2 * 3 * g.head_k_dim * g.head_v_dim * g.num_v_heads * 100
    elif model_type == "deepseek_v3":  # QK^T over nope + rope dims, PV over the value dims
        assert c.dense_layers == 1
        m = c.mla
        assert f["attention"] == 3 * 2 * c.num_heads * (m.qk_head_dim + m.v_head_dim) * attended_keys(100, 0)
    elif model_type == "qwen3_moe":  # routed: far below every expert on every token
        dense = read_flops(dataclasses.replace(c, moe=None, intermediate_size=c.moe_intermediate_size * c.moe.num_experts),
                           100, 0)["trunk"]
        assert f["trunk"] < dense


def test_rules_entry_shares_and_ratio():
    raw = {"reuse": {"seconds": 2.0, "cpu_seconds": 3.0, "tokens_run": 30, "tokens_naive": 100},
           "no_reuse": {"seconds": 4.0, "cpu_seconds": 4.0, "tokens_run": 50, "tokens_naive": 100}}
    entry = rules_entry(raw)
    assert entry["reuse"]["share_of_naive"] == 0.3 and entry["no_reuse"]["share_of_naive"] == 0.5
    assert entry["ratio"] == {"seconds": 0.5, "cpu_seconds": 0.75}


def _bench(tmp_path, monkeypatch, *flags) -> dict:
    monkeypatch.setenv("JAXEVAL_BENCH_CACHE", str(tmp_path / "shapes"))
    out = tmp_path / "bench.json"
    assert main(["bench", "--model", "tiny-llama", "--lengths", "100", "--repeats", "1", "--prompt_tokens", "8",
                 "--new_tokens", "3", "--rules_limit", "0", "--matmul_n", "256", "--decode_slots", "", "--out", str(out),
                 *flags]) == 0
    return json.loads(out.read_text())


@pytest.mark.skipif(not HAS_TORCH, reason="the transformers side needs torch (the test extra)")
def test_bench_tiny_against_transformers(tmp_path, monkeypatch):
    report = _bench(tmp_path, monkeypatch, "--batches", "2", "--decode_slots", "256,512", "--decode_repeats", "2")
    assert report["schema"] == "jaxeval-bench/2" and report["transformers"]["available"]
    assert report["targets_from"] == "issue 27" and report["read"][0]["load"]["before"]
    assert report["commit"] is None or (re.fullmatch(r"[0-9a-f]{40}", report["commit"])
                                        and isinstance(report["commit_dirty"], bool))
    assert report["model"]["name"] == "tiny-llama" and report["hardware"]["platform"] == "cpu"
    assert len(report["load"]["before"]) == 3 and report["command"].startswith("jaxeval bench --model tiny-llama")
    peak = report["matmul_peak"]
    assert peak["flops_per_s"] == max(peak["samples_flops_per_s"]) > 0

    (read,) = report["read"]
    j, t = read["jaxeval"], read["transformers"]
    c = config_from_hf(SHAPES["tiny-llama"][0])
    assert read["flops"] == read_flops(c, 99, 99)  # 99 inputs needed, 99 read rows
    assert read["flops"]["attention"] == 2 * 4 * 64 * (99 * 100 // 2) * 2 * 2  # layers, heads, head_dim, keys
    assert read["ratio"]["seconds"] == pytest.approx(j["seconds"] / t["seconds"])
    assert read["ratio"]["cpu_seconds"] == pytest.approx(j["cpu_seconds"] / t["cpu_seconds"]) and j["cpu_seconds"] > 0
    assert read["ratio"]["per_repeat_seconds"] == pytest.approx([a / b for a, b in zip(j["times"], t["times"])])
    assert read["ratio"]["peak_rss"] == pytest.approx(j["peak_rss_mb"] / t["peak_rss_mb"])
    assert j["mfu"] == pytest.approx(read["flops"]["total"] / j["seconds"] / peak["flops_per_s"])
    assert j["tokens_per_s"] == pytest.approx(100 / j["seconds"])
    assert read["mean_logprob_difference"] < 1e-3  # the same weights on both sides
    # one compile of the prefill step and of the head for this bucket, none in the timed call
    assert j["compile_first_call"]["by_function"].get("jit(prefill_chunk)", 0) <= 1
    assert j["compile_timed_calls"] == 0 and j["jit_cache_sizes"]["prefill_chunk"] == 1

    (gen,) = report["generate"]
    assert gen["batch"] == 2 and gen["jaxeval"]["new_tokens"] == gen["transformers"]["new_tokens"] == 2 * 3
    assert gen["ratio"]["tokens_per_s"] == pytest.approx(gen["jaxeval"]["tokens_per_s"] / gen["transformers"]["tokens_per_s"])
    assert gen["jaxeval"]["tokens_per_s"] == pytest.approx(6 / gen["jaxeval"]["seconds"])
    assert report["rules"] is None

    decode = report["decode_step"]  # 2 cache lengths x (early, late), one program per length, none timed
    assert [(s["slots"], s["position"]) for s in decode["steps"]] == [(256, 100), (256, 254), (512, 100), (512, 510)]
    assert decode["compile_first_calls"]["count"] >= 2 and decode["compile_timed_calls"] == 0
    assert all(s["ms"] > 0 and s["min_ms"] <= s["ms"] for s in decode["steps"])
    assert decode["growth"]["late"]["kv_bytes_read"] == pytest.approx(511 / 255)
    assert decode["growth"]["early"]["time"] == pytest.approx(decode["steps"][2]["min_ms"] / decode["steps"][0]["min_ms"])

    targets = {x["name"]: x for x in report["targets"]}
    assert targets["read_time_100"]["measured"] == read["ratio"]["seconds"]
    assert all(x["met"] is None for name, x in targets.items() if name != "read_time_100")  # nothing at the targets' shapes
    assert "256 to 512 slots" in targets["decode_step_growth"]["note"]


def test_bench_without_transformers_reports_it(tmp_path, monkeypatch, capsys):
    report = _bench(tmp_path, monkeypatch, "--batches", "", "--transformers", "off")
    assert not report["transformers"]["available"] and "off" in report["transformers"]["reason"]
    (read,) = report["read"]
    assert read["transformers"] is None and read["ratio"]["seconds"] is None and read["jaxeval"]["seconds"] > 0
    assert capsys.readouterr().err.count("transformers comparison unavailable") == 1


@pytest.mark.parametrize("flags, message", [
    (["--model", "/no/such/folder"], "neither a named shape"),
    (["--lengths", "8q"], "not a length"),
    (["--repeats", "-1"], "--repeats must be"),
    (["--model", "tiny-llama", "--decode_slots", "300"], "--decode_slots 300"),
    (["--batches", "8,x"], "--batches"),
])
def test_bench_bad_input_is_one_line(flags, message, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXEVAL_BENCH_CACHE", str(tmp_path / "shapes"))
    assert main(["bench", *flags, "--out", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_estimate_is_the_flop_count_over_each_chips_rate(tmp_path, monkeypatch, capsys):
    """--estimate writes no weights (the 8B shape's folder would be 16 GB) and divides the same FLOP count
    the measured runs use by peak x MFU; 128k of Llama-3-8B in bfloat16 does not fit one v5e (16 GiB)."""
    from jaxeval.plan.hardware import ACCELERATORS

    monkeypatch.setenv("JAXEVAL_BENCH_CACHE", str(tmp_path / "shapes"))
    out = tmp_path / "estimate.json"
    assert main(["bench", "--model", "llama-8b", "--lengths", "32k,128k", "--estimate", "--mfu", "0.5",
                 "--out", str(out)]) == 0
    assert not (tmp_path / "shapes").exists()
    report = json.loads(out.read_text())
    e32, e128 = report["estimates"]
    flops = read_flops(config_from_hf(SHAPES["llama-8b"][0]), 32767, 32767)["total"]
    assert e32["flops"]["total"] == flops
    for name, (peak, hbm, _, _) in ACCELERATORS.items():
        assert e32["chips"][name]["seconds"] == pytest.approx(flops / (peak * 0.5))
    assert e128["chips"]["v5e"]["fits_one_chip"] is False and e128["chips"]["h200"]["fits_one_chip"] is True
    assert e128["kv_bytes"] == 2 * 32 * 131072 * 8 * 128 * 2
    printed = capsys.readouterr().out
    assert "v6e" in printed and "exceed one chip's HBM" in printed
    assert main(["bench", "--estimate", "--mfu", "1.5", "--out", str(out)]) == 2


def test_reads_past_the_window_only_with_the_override(tmp_path, monkeypatch, capsys):
    """--max_position_embeddings replaces the config field for the context check and on both sides."""
    from jaxeval.bench.worker import overrides

    monkeypatch.setenv("JAXEVAL_BENCH_CACHE", str(tmp_path / "shapes"))
    flags = ["bench", "--model", "tiny-llama", "--lengths", "100", "--batches", "", "--decode_slots", "",
             "--rules_limit", "0", "--transformers", "off", "--out", str(tmp_path / "b.json")]
    assert main([*flags, "--max_position_embeddings", "64"]) == 2
    assert "max_position_embeddings=64" in capsys.readouterr().err
    report = _bench(tmp_path, monkeypatch, "--batches", "", "--transformers", "off", "--max_position_embeddings", "128")
    assert report["model"]["max_position_embeddings_override"] == 128
    assert "--max_position_embeddings 128" in report["command"]
    assert overrides({"max_position_embeddings": 128}) == {"max_position_embeddings": 128} and overrides({}) == {}


@pytest.mark.parametrize("content, message", [(b"{bad", "not valid JSON"), (b"\xff\xfe", "not UTF-8")])
def test_a_model_folder_whose_config_is_broken_is_one_line(content, message, capsys, tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_bytes(content)
    assert main(["bench", "--model", str(tmp_path / "model"), "--out", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "config.json" in err
