"""`jaxeval curve`: buckets, the text sources and their errors, and the command end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jaxeval.cli import main
from jaxeval.curve.positions import bucket_stats, overall
from jaxeval.curve.text import read_source
from jaxeval.errors import DataError


def test_buckets_cover_every_position_once():
    values = {"logprob": np.arange(1, 10, dtype=np.float32) * -1, "top1": np.array([1, 0] * 4 + [1], np.float32)}
    buckets = bucket_stats(values, 4)  # positions 1..9: [0,4) holds 1-3, [4,8) 4-7, [8,12) 8-9
    assert [(b["start"], b["end"], b["positions"]) for b in buckets] == [(0, 4, 3), (4, 8, 4), (8, 10, 2)]
    assert buckets[0]["mean_logprob"] == pytest.approx(-2.0) and buckets[1]["top1_rate"] == 0.5
    assert overall(values)["positions"] == 9


def test_text_sources(tmp_path):
    (tmp_path / "h.json").write_text(json.dumps({"text": "a haystack"}))
    assert read_source(tmp_path / "h.json") == "a haystack"
    (tmp_path / "bad.json").write_text(json.dumps({"essay": "x"}))
    with pytest.raises(DataError, match="string field 'text'"):
        read_source(tmp_path / "bad.json")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(DataError, match="empty"):
        read_source(tmp_path / "empty.txt")


def test_lengths_are_checked_against_the_text_and_the_model():
    from transformers import AutoTokenizer

    from jaxeval.curve.text import text_ids

    tokenizer = AutoTokenizer.from_pretrained("jaxeval/assets/tiny_llama")
    with pytest.raises(DataError, match="fewer than --length 500"):
        text_ids("t.txt", "only a few words", tokenizer, 500, 32769)
    with pytest.raises(DataError, match="reads at most 32769 tokens"):
        text_ids("t.txt", "only a few words", tokenizer, 40000, 32769)
    assert len(text_ids("t.txt", "a few words " * 50, tokenizer, None, 64)) == 64


@pytest.mark.parametrize("content, flags, message", [
    (b"\xff\xfe not utf-8", [], "UTF-8"),
    (b"", [], "empty"),
])
def test_bad_input_is_one_line(tmp_path, capsys, content, flags, message):
    text = tmp_path / "t.txt"
    text.write_bytes(content)
    assert main(["curve", "--text", str(text), "--out", str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_curve_against_itself_then_a_reference_run(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text(" ".join(f"The {i}th line of a long text about tapirs." for i in range(200)))
    out = tmp_path / "curve"
    assert main(["curve", "--text", str(text), "--length", "384", "--buckets", "3", "--reference",
                 "jaxeval/assets/tiny_llama", "--out", str(out)]) == 0
    result = json.loads((out / "curve.json").read_text())
    assert result["tokens"] == 384 and [b["positions"] for b in result["buckets"]] == [127, 128, 128]
    assert result["overall"]["mean_kl"] == pytest.approx(0.0, abs=1e-6) and result["overall"]["top1_agreement"] == 1.0
    assert (out / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "KL 0.000000, agreement 1.0000" in capsys.readouterr().out


def test_reference_args_override_the_model_flags_for_the_reference():
    import argparse

    from jaxeval.curve.command import reference_namespace
    from jaxeval.errors import ConfigError

    args = argparse.Namespace(model="m", reference="r", quantize="int8", kv_cache="int8", prefill_chunk=2048,
                              reference_args="quantize=none, kv_cache=exact,prefill_chunk=512")
    ref = reference_namespace(args)
    assert (ref.model, ref.quantize, ref.kv_cache, ref.prefill_chunk) == ("r", "none", "exact", 512)
    assert args.quantize == "int8"
    with pytest.raises(ConfigError, match="not k=v"):
        reference_namespace(argparse.Namespace(**{**vars(args), "reference_args": "model=x"}))


def test_reference_args_without_a_reference_is_refused(tmp_path, capsys):
    text = tmp_path / "t.txt"
    text.write_text("some text")
    assert main(["curve", "--text", str(text), "--reference_args", "quantize=none", "--out", str(tmp_path / "o")]) == 2
    assert "--reference_args needs --reference" in capsys.readouterr().err


@pytest.mark.slow
def test_an_int8_copy_against_the_original_has_a_positive_kl(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text(" ".join(f"The {i}th line of a long text about tapirs." for i in range(200)))
    assert main(["curve", "--text", str(text), "--length", "256", "--buckets", "2", "--quantize", "int8",
                 "--reference", "jaxeval/assets/tiny_llama", "--reference_args", "quantize=none",
                 "--out", str(tmp_path / "q")]) == 0
    overall = json.loads((tmp_path / "q" / "curve.json").read_text())["overall"]
    assert overall["mean_kl"] > 0 and overall["top1_agreement"] <= 1.0


def test_the_default_text_is_the_shipped_ruler_haystack(tmp_path):
    out = tmp_path / "curve"
    assert main(["curve", "--length", "256", "--buckets", "2", "--out", str(out)]) == 0
    result = json.loads((out / "curve.json").read_text())
    assert result["text"] == "ruler:essay" and result["tokens"] == 256
    source = result["text_source"]
    assert source["shipped"] and source["path"].endswith("haystack_pride_and_prejudice.json")
    assert len(source["sha256"]) == 64 and "Pride and Prejudice" in source["about"]


def test_ruler_haystacks_by_name(tmp_path):
    from jaxeval.curve.text import resolve_text
    from jaxeval.errors import ConfigError

    essay = tmp_path / "essays.json"
    essay.write_text(json.dumps({"text": "An essay on startups. " * 50}))
    text, source = resolve_text("ruler:essay", str(essay))
    assert text.startswith("An essay on startups.") and source["path"] == str(essay) and not source["shipped"]
    text, source = resolve_text("ruler:noise", None)
    assert text.startswith("The grass is green. The sky is blue.") and source["path"] is None
    with pytest.raises(ConfigError, match="unknown RULER haystack; known: ruler:essay, ruler:noise"):
        resolve_text("ruler:paulgraham", None)
    with pytest.raises(ConfigError, match="--ruler_essay is read only with --text ruler:essay"):
        resolve_text(str(essay), str(essay))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="--ruler_essay .*bad.json: not JSON"):
        resolve_text("ruler:essay", str(tmp_path / "bad.json"))
