"""The rules configs: target reads, metrics, reference scores on disk, reading each text once."""

from __future__ import annotations

import gzip
import json

import pytest

from agent_bench_helpers import HashedContextBackend, OracleBackend, write_jsonl
from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, format_rows_table, load_split, run_agent_bench
from jaxeval.benchmarks.agent_bench.rules import TextTokens, _cell, target_read
from jaxeval.errors import DataError

RULES = ("rules_en", "rules_cs", "rules_de")


def _run(backend, tokenizer, data=SHIPPED_DATA, sets=RULES, **kwargs):
    return run_agent_bench(backend, tokenizer, data, sets=sets, lengths=("8k",), **kwargs)


def test_shipped_rules_sample(tokenizer):
    by_config = {config: load_split(SHIPPED_DATA, config, "8k") for config in RULES}
    for config, items in by_config.items():
        assert {(i.family, i.placement) for i in items} == {
            (f, p) for f in ("substitution", "redirect", "required") for p in ("system", "user")}
        assert {i.lang for i in items} == {config[-2:]}
        for item in items:
            start, end = item.rule_char
            assert item.text_with_rule[:start] == item.text_without_rule[:start]
            assert item.rule in item.text_with_rule[start:end]
            for target in item.targets:
                assert target.distance_tokens >= 512
                assert item.text_without_rule[target.char_without_rule:].startswith(target.original_text)
                assert item.text_with_rule[target.char_with_rule:].startswith(target.original_text)
    # the three languages share their sessions
    assert ({i.text_without_rule for i in by_config["rules_en"]} == {i.text_without_rule for i in by_config["rules_cs"]}
            == {i.text_without_rule for i in by_config["rules_de"]})


def test_target_read_is_the_first_expected_token_after_the_prefix(tokenizer):
    text = "<|im_start|>assistant\n<parameter=command>\ngrep -rn x src<|im_end|>"
    char = text.index("grep")
    read = target_read(TextTokens(tokenizer), text, char, "rg")
    expected = tokenizer(text[:char] + "rg")["input_ids"]
    assert read.ids == tuple(tokenizer(text)["input_ids"])  # read from the whole text
    assert read.ids[:read.position] == tuple(expected[:read.position]) and read.token == expected[read.position]
    # "g" + "rep" tokenizes as one "grep": no token starts at char + 1, so the target is unaligned
    assert target_read(TextTokens(tokenizer), text, char + 1, "rep") is None


def test_cell_metrics_by_hand():
    targets = [{"scores": (0.0, s), "reference": (0.0, r)} for s, r in
               [(2.0, 4.0), (1.0, 4.0), (-3.0, -2.0), (5.0, 0.5), (1.0, -1.0)]]
    targets.append({"scores": None, "reference": None})
    cell = _cell(targets, "system", "all")
    # counted: |ref| >= 1 -> 4 targets; ratios 0.5, 0.25, 1.5, -1 -> follow 2 / 4
    assert cell["counted"] == 4 and cell["targets"] == 6 and cell["unaligned"] == 1
    assert cell["follow"] == 0.5
    assert cell["retained"] == pytest.approx((2 + 1 - 3 + 1) / (4 + 4 - 2 - 1))
    assert cell["eff"] == pytest.approx(1 / 4) and cell["eff_ref"] == pytest.approx(5 / 4)
    empty = _cell([{"scores": (0.0, 0.5), "reference": (0.0, 0.5)}], "user", "redirect")
    assert empty["follow"] is None and empty["retained"] is None and empty["counted"] == 0


def test_self_reference_and_headline_rows(tokenizer):
    result = _run(HashedContextBackend(), tokenizer)
    assert [row["row"] for row in result["rows"]] == [
        "Rules followed at 8k tokens", "Rules kept far back, worst case (1.00 = as the original)",
        "Czech rules kept far back, worst case", "German rules kept far back, worst case"]
    assert result["reference"]["source"] == "self" and "its own reference" in result["reference"]["note"]
    for config in RULES:
        metrics = result["sets"][config]["8k"]
        assert metrics["items"] == 12 and metrics["targets"] == 36 and metrics["unaligned"] == 0
        assert len(metrics["cells"]) == 12
        for cell in metrics["cells"].values():
            assert cell["follow"] in (None, 1.0) and (cell["retained"] is None or cell["retained"] == pytest.approx(1))
        assert metrics["counted"] > 0
    assert all(row["value"] == pytest.approx(1.0) for row in result["rows"])
    assert "Czech rules kept far back, worst case" in format_rows_table(result)


def test_each_distinct_text_is_read_once(tokenizer):
    backend = HashedContextBackend()
    result = _run(backend, tokenizer)
    texts = {text for config in RULES for item in load_split(SHIPPED_DATA, config, "8k")
             for text in (item.text_without_rule, item.text_with_rule)}
    assert len(backend.calls) == len(texts) == 2 + 36  # two sessions without rules, 36 with
    assert len({ids.tobytes() for ids, _, _ in backend.calls}) == len(backend.calls)
    tokens = result["tokens"]
    assert tokens["rules_tokens_naive"] == 36 * 2 * 8193
    assert tokens["rules_tokens_run"] == sum(int(positions.max()) for _, positions, _ in backend.calls)
    assert tokens["rules_tokens_run"] <= 0.45 * tokens["rules_tokens_naive"]
    # one config alone gives the same scores as all three together
    alone = _run(HashedContextBackend(), tokenizer, sets=("rules_cs",))
    assert alone["sets"]["rules_cs"] == result["sets"]["rules_cs"]


def test_reference_scores_round_trip(tmp_path, tokenizer):
    path = tmp_path / "ref.json.gz"
    reference = _run(HashedContextBackend(), tokenizer, save_scores=path)
    payload = json.loads(gzip.open(path, "rt").read())
    assert payload["mode"] == "text" and "rules_en/8k/rules_en-8k-000-substitution-system/0" in payload["scores"]
    same = _run(HashedContextBackend(), tokenizer, reference_scores=path)
    assert same["sets"] == reference["sets"] and same["reference"]["source"] == str(path)
    # a model with a quarter of the reference's effects: follows none, retains 0.25
    weak = _run(HashedContextBackend(scale=0.25), tokenizer, reference_scores=path)
    for config in RULES:
        overall = weak["sets"][config]["8k"]["cells"]["all/all"]
        assert overall["follow"] == 0.0 and overall["retained"] == pytest.approx(0.25)
        assert overall["eff"] == pytest.approx(0.25 * overall["eff_ref"])
        assert overall["counted"] == reference["sets"][config]["8k"]["counted"]
    assert weak["rows"][1]["value"] == pytest.approx(0.25)


def test_reference_errors(tmp_path, tokenizer, bos_tokenizer):
    path = tmp_path / "ref.json.gz"
    _run(OracleBackend(), tokenizer, sets=("rules_en",), save_scores=path, limit=2)
    with pytest.raises(DataError, match="another tokenizer"):
        _run(OracleBackend(), bos_tokenizer, sets=("rules_en",), reference_scores=path, limit=2)
    with pytest.raises(DataError, match="lacks 6 target"):
        _run(OracleBackend(), tokenizer, sets=("rules_en",), reference_scores=path, limit=4)
    with pytest.raises(DataError, match="has 3 target.*does not score"):
        _run(OracleBackend(), tokenizer, sets=("rules_en",), reference_scores=path, limit=1)
    with pytest.raises(DataError, match="no scores for rules_cs/8k"):
        _run(OracleBackend(), tokenizer, sets=("rules_cs",), reference_scores=path, limit=2)
    payload = json.loads(gzip.open(path, "rt").read())
    for change, message in ((lambda p: p.update(mode="stored_ids"), "mode 'stored_ids', this run in mode 'text'"),
                            (lambda p: p["items"].update({k: "0" for k in p["items"]}), "another data revision")):
        changed = json.loads(json.dumps(payload))
        change(changed)
        bad = tmp_path / "bad.json.gz"
        with gzip.open(bad, "wt") as out:
            json.dump(changed, out)
        with pytest.raises(DataError, match=message):
            _run(OracleBackend(), tokenizer, sets=("rules_en",), reference_scores=bad, limit=2)
    (tmp_path / "junk.json.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="junk.json.gz: not a gzipped JSON"):
        _run(OracleBackend(), tokenizer, sets=("rules_en",), reference_scores=tmp_path / "junk.json.gz", limit=1)


def test_rules_schema_errors(tmp_path):
    record = {k: (list(v) if isinstance(v, tuple) else v) for k, v in
              load_split(SHIPPED_DATA, "rules_en", "8k")[0].__dict__.items() if k != "origin"}
    record["targets"] = [dict(t.__dict__) for t in load_split(SHIPPED_DATA, "rules_en", "8k")[0].targets]
    record["sources"] = [dict(s) for s in record["sources"]]
    for change, message in ((lambda r: r.update(family="swap"), "field 'family': 'swap' is not one of"),
                            (lambda r: r.update(lang="de"), "field 'lang': 'de' in config rules_en"),
                            (lambda r: r["targets"][0].update(char_with_rule=5), "lies before the rule's end"),
                            (lambda r: r.update(rule_char=[0, 3]), "field 'rule_char'")):
        bad = json.loads(json.dumps(record))
        change(bad)
        write_jsonl(tmp_path, [bad], config="rules_en")
        with pytest.raises(DataError, match=message):
            load_split(tmp_path, "rules_en", "8k")


def test_every_rules_target_is_a_logged_sample(tokenizer):
    result = _run(HashedContextBackend(), tokenizer, sets=("rules_en",))
    targets = sum(len(item.targets) for item in load_split(SHIPPED_DATA, "rules_en", "8k"))
    logged = [s for s in result["sample_log"] if s["config"] == "rules_en"]
    assert len(logged) == targets and len({s["key"] for s in logged}) == targets
    first = logged[0]
    assert first["key"] == f"agent_bench/rules_en/8k/{first['item']}/{first['target']}"
    aligned = [s for s in logged if s["logprob_with_rule"] is not None]
    assert aligned and all(s["reference_with_rule"] == s["logprob_with_rule"] for s in aligned)  # self-reference
    assert result["sets"]["rules_en"]["8k"]["scored"] == len(aligned)


@pytest.mark.parametrize("separator_in_span", [True, False])
def test_rule_char_with_or_without_the_separator_before_the_rule(tmp_path, separator_in_span):
    """Both conventions of the card: the common prefix ends at the rule or at the separator before it."""
    item = load_split(SHIPPED_DATA, "rules_en", "8k")[0]
    record = {k: (list(v) if isinstance(v, tuple) else v) for k, v in item.__dict__.items() if k != "origin"}
    record["targets"] = [dict(t.__dict__) for t in item.targets]
    record["sources"] = [dict(s) for s in record["sources"]]
    without, start = record["text_without_rule"], record["rule_char"][0]
    cut = without.rfind(" ", 0, start)  # a separator that the without-rule text does not repeat
    line = "\n" + record["rule"]
    record["text_with_rule"] = without[:cut] + line + without[cut:]
    first = cut if separator_in_span else cut + 1
    record["rule_char"] = [first, cut + len(line)]
    for target in record["targets"]:
        target["char_with_rule"] = target["char_without_rule"] + len(line)
    write_jsonl(tmp_path, [record], config="rules_en")
    (loaded,) = load_split(tmp_path, "rules_en", "8k")
    assert loaded.rule_char == tuple(record["rule_char"])
    record["text_with_rule"] = without[:cut - 1] + "X" + line + without[cut:]  # a real difference is refused
    write_jsonl(tmp_path, [record], config="rules_en")
    with pytest.raises(DataError, match="differ before the rule"):
        load_split(tmp_path, "rules_en", "8k")
