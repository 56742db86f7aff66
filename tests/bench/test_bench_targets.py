"""Issue 27's targets from fake measurements (met, missed, not measured), the decode step's figures,
a schema-1 file read as it is, and the recorded command parsed back to the run's flags."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

import pytest

from jaxeval.bench.cli import add_arguments, command_line, commit
from jaxeval.bench.report import check_targets, decode_entry, table
from jaxeval.bench.shapes import SHAPES
from jaxeval.models.config import config_from_hf

SCHEMA1 = Path(__file__).parent / "data" / "bench_schema1_llama-57m_8k.json"  # main e6c3f13's 57M 8k row


def _report(read=(), generate=(), decode=None, rules=None) -> dict:
    return {"read": [{"tokens": n, "ratio": {"seconds": ratio, "cpu_seconds": ratio / 2}, "jaxeval": {"mfu": mfu}}
                     for n, ratio, mfu in read],
            "generate": [{"batch": b, "prompt_tokens": p, "new_tokens": k, "ratio": {"tokens_per_s": r, "cpu_seconds": 0.5}}
                         for b, p, k, r in generate],
            "decode_step": decode, "rules": rules}


def _decode(rows=8, low=256, high=4096, growth=1.05) -> dict:
    return {"rows": rows, "growth": {"early": {"from_slots": low, "to_slots": high, "time": growth, "cpu_time": 1.3},
                                     "late": {"from_slots": low, "to_slots": high, "time": 3.0}}}


def _by_name(report) -> dict:
    return {t["name"]: t for t in check_targets(report)}


def test_every_target_met():
    t = _by_name(_report(read=[(8192, 0.9, 0.7), (32768, 1.0, 0.85)], generate=[(8, 4096, 128, 1.6)],
                         decode=_decode(growth=1.05), rules={"ratio": {"seconds": 0.4}}))
    assert list(t) == ["read_time_8k", "read_time_32k", "read_peak_share_32k", "generate_batch8",
                       "decode_step_growth", "rules_reuse_time"]
    assert all(x["met"] is True for x in t.values())
    assert t["read_time_32k"]["measured"] == 1.0 and t["read_peak_share_32k"]["measured"] == 0.85
    assert t["generate_batch8"]["target"] == ">= 1.5" and t["decode_step_growth"]["measured"] == 1.05
    # process CPU seconds beside, not judged: the generation one as tokens/s (transformers' / jaxeval's)
    assert t["read_time_8k"]["cpu_measured"] == 0.45 and t["generate_batch8"]["cpu_measured"] == 2.0
    assert t["decode_step_growth"]["cpu_measured"] == 1.3 and "cpu_measured" not in t["rules_reuse_time"]


def test_every_target_missed():
    t = _by_name(_report(read=[(8192, 1.22, 0.62), (32768, 1.25, 0.609)], generate=[(8, 4096, 128, 0.95)],
                         decode=_decode(growth=2.1), rules={"ratio": {"seconds": 1.14}}))
    assert all(x["met"] is False for x in t.values())
    assert t["read_time_8k"]["measured"] == 1.22 and t["rules_reuse_time"]["measured"] == 1.14


def test_nothing_measured():
    t = _by_name(_report())
    assert all(x["met"] is None and x["measured"] is None and "cpu_measured" not in x for x in t.values())
    assert len(t) == 6


def test_other_lengths_and_options_are_not_the_targets():
    """A read at another length gets its own ratio target; the 8k / 32k ones stay unmeasured. A batch-8
    row at other prompt / new-token counts, or a decode step at other slots or rows, is not the target's
    row: not measured, with a note saying why."""
    t = _by_name(_report(read=[(4096, 0.8, 0.5), (100, 1.3, 0.1)], generate=[(8, 512, 32, 2.0), (1, 4096, 128, 9.0)],
                         decode=_decode(low=256, high=512), rules={"ratio": {"seconds": None}}))
    assert t["read_time_4k"]["met"] is True and t["read_time_100"]["met"] is False
    assert t["read_time_8k"]["met"] is None and t["read_peak_share_32k"]["met"] is None
    assert t["generate_batch8"]["measured"] is None and "512 prompt / 32 new" in t["generate_batch8"]["note"]
    assert t["decode_step_growth"]["measured"] is None and "256 to 512 slots" in t["decode_step_growth"]["note"]
    assert t["rules_reuse_time"]["met"] is None
    assert _by_name(_report(decode=_decode(rows=1)))["decode_step_growth"]["met"] is None


def test_decode_entry_medians_bytes_and_growth():
    c = config_from_hf(SHAPES["llama-57m"][0])
    raw = {"rows": 8, "repeats": 3, "steps": [
        {"slots": 256, "position_name": "early", "position": 100, "wall_s": [0.05, 0.04, 0.06], "cpu_s": [0.08] * 3},
        {"slots": 256, "position_name": "late", "position": 254, "wall_s": [0.05] * 3, "cpu_s": [0.1] * 3},
        {"slots": 4096, "position_name": "early", "position": 100, "wall_s": [0.044, 0.2, 0.041], "cpu_s": [0.088] * 3},
        {"slots": 4096, "position_name": "late", "position": 4094, "wall_s": [0.15] * 3, "cpu_s": [0.3] * 3}]}
    entry = decode_entry(raw, c, "float32")
    early256 = entry["steps"][0]
    assert (early256["ms"], early256["min_ms"], early256["cpu_ms"]) == (50.0, 40.0, 80.0)
    # K and V (64 + 64 wide) of 8 layers x 2 KV heads for 8 rows, every key up to the position, float32
    assert early256["kv_bytes_read"] == 8 * 8 * 101 * 2 * 128 * 4
    # growth in time: of the min wall times (0.041 / 0.04); the medians' beside (0.044 / 0.05)
    assert entry["growth"]["early"]["time"] == pytest.approx(41 / 40) and entry["growth"]["early"]["kv_bytes_read"] == 1
    assert entry["growth"]["early"]["median_time"] == pytest.approx(44 / 50)
    assert entry["growth"]["late"]["time"] == pytest.approx(3.0) and entry["growth"]["late"]["cpu_time"] == pytest.approx(3)
    assert entry["growth"]["late"]["kv_bytes_read"] == pytest.approx(4095 / 255)
    assert _by_name(_report(decode=entry))["decode_step_growth"]["met"] is True
    assert decode_entry({"error": "jaxeval decode_step: boom"}, c, "float32") == {"error": "jaxeval decode_step: boom"}


def test_schema1_file_still_reads():
    """A file written before issue 27 (issue 18's targets, no decode step) gives issue 27's targets from
    what it measured, and its table prints."""
    old = json.loads(SCHEMA1.read_text())
    assert old["schema"] == "jaxeval-bench/1"
    t = _by_name(old)
    assert t["read_time_8k"]["measured"] == pytest.approx(0.822, abs=1e-3) and t["read_time_8k"]["met"] is True
    assert t["generate_batch8"]["met"] is None and "512 prompt / 32 new" in t["generate_batch8"]["note"]
    assert t["decode_step_growth"]["met"] is None and t["rules_reuse_time"]["met"] is None
    printed = table(old | {"targets": list(t.values())})
    assert "target read_time_8k <= 1.0: 0.822 met" in printed and "generate_batch8 >= 1.5: - not measured" in printed


def test_recorded_command_parses_back_to_the_run():
    """Every flag is spelled out (defaults too) and quoted, so an empty --batches survives the shell."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--batches", "", "--lengths", "8192", "--decode_slots", ""])
    line = command_line(args)
    assert "--batches ''" in line and "--prompt_tokens 4096 --new_tokens 128" in line
    again = parser.parse_args(shlex.split(line)[2:])
    assert vars(again) == vars(args)
    assert vars(parser.parse_args(shlex.split(command_line(parser.parse_args([])))[2:])) == vars(parser.parse_args([]))


def test_commit_outside_a_checkout_is_none(tmp_path):
    import subprocess

    assert commit(tmp_path) == {"commit": None, "commit_dirty": None}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "t"], check=True)
    assert commit(tmp_path)["commit"] is not None and commit(tmp_path)["commit_dirty"] is False
    (tmp_path / "lib").mkdir()  # a copy installed in a folder of some other repository is not its checkout
    assert commit(tmp_path / "lib") == {"commit": None, "commit_dirty": None}
    here = commit()  # the tests run from a checkout or an installed copy
    assert here["commit"] is None or len(here["commit"]) == 40 and isinstance(here["commit_dirty"], bool)
