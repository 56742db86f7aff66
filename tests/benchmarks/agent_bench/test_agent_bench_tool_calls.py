"""The tool_calls config: schema checks, far / fresh / near accuracy, per kind, multi-token targets."""

from __future__ import annotations

import pytest

from agent_bench_helpers import OracleBackend, WrongBackend, WrongOnToken, write_jsonl
from jaxeval.benchmarks.agent_bench import SHIPPED_DATA, format_rows_table, load_split, run_agent_bench
from jaxeval.errors import DataError

SOURCE = {"dataset": "hand", "revision": "0", "license": "CC BY 4.0", "tokens": 100, "documents": 1}


def tool_record(item_id: str = "tc-000") -> dict:
    """One definition, then three calls: the name targets are near, far and fresh, far not fresh."""
    definition = '{"name": "search_files"}'
    text = f"<|im_start|>system\n<tools>\n{definition}\n</tools><|im_end|>\n"
    definitions = [{"id": "tool:search_files", "text": definition, "char": [text.index(definition),
                                                                         text.index(definition) + len(definition)]}]
    targets = []
    for far, fresh in ((False, False), (True, True), (True, False)):
        text += "<|im_start|>assistant\n<tool_call>\n<function="
        targets.append({"char": [len(text), len(text) + len("search_files>")], "target": "search_files>",
                        "kind": "name", "far": far, "fresh": fresh, "definition_id": "tool:search_files",
                        "distance_tokens": 600 if far else 20})
        text += "search_files>\n<parameter="
        targets.append({"char": [len(text), len(text) + len("pattern>")], "target": "pattern>", "kind": "param",
                        "far": far, "fresh": fresh, "definition_id": "tool:search_files",
                        "distance_tokens": 600 if far else 20})
        text += "pattern>\nTODO\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
    return {"id": item_id, "text": text, "definitions": definitions, "targets": targets, "sources": [SOURCE]}


def test_shipped_tool_calls_sample(tokenizer):
    items = load_split(SHIPPED_DATA, "tool_calls", "8k")
    assert len(items) == 2
    for item in items:
        assert len(tokenizer(item.text)["input_ids"]) == 8193
        assert item.text.startswith("<|im_start|>system\n") and "<tools>\n{" in item.text
        kinds = {t.kind for t in item.targets}
        assert kinds <= {"name", "param", "next", "command"} and {"name", "param", "next"} <= kinds
        for target in item.targets:
            assert item.text[slice(*target.char)] == target.target
            assert target.far == (target.distance_tokens >= 512)
    assert any(t.fresh for item in items for t in item.targets)
    assert any(t.kind == "command" for item in items for t in item.targets)


def test_oracle_and_wrong_on_the_sample(tokenizer):
    result = run_agent_bench(OracleBackend(), tokenizer, SHIPPED_DATA, sets=("tool_calls",), lengths=("8k",))
    assert [(row["row"], row["value"]) for row in result["rows"]] == [("Distant tool calls at 8k tokens", 1.0)]
    metrics = result["sets"]["tool_calls"]["8k"]
    assert metrics["items"] == 2 and metrics["unaligned"] == 0 and metrics["targets"] == metrics["scored"]
    assert metrics["far_targets"] + metrics["near_targets"] == metrics["targets"]
    assert metrics["fresh_accuracy"] == metrics["near_accuracy"] == 1.0
    assert set(metrics["by_kind"]) == {"name", "param", "next", "command"}
    assert sum(kind["targets"] for kind in metrics["by_kind"].values()) == metrics["targets"]
    wrong = run_agent_bench(WrongBackend(), tokenizer, SHIPPED_DATA, sets=("tool_calls",), lengths=("8k",))
    assert wrong["rows"][0]["value"] == 0.0
    assert "Distant tool calls at 8k tokens" in format_rows_table(wrong)


def test_far_fresh_near_and_multi_token_targets(tmp_path, tokenizer):
    write_jsonl(tmp_path, [tool_record()], config="tool_calls")
    # Wrong only on ">": every target ("search_files>", "pattern>") ends in ">", so none is correct.
    wrong_close = run_agent_bench(WrongOnToken(tokenizer.convert_tokens_to_ids(">")), tokenizer, tmp_path,
                                  sets=("tool_calls",), lengths=("8k",))["sets"]["tool_calls"]["8k"]
    assert wrong_close["far_accuracy"] == wrong_close["near_accuracy"] == 0.0
    # Wrong only on "pattern"'s first token: names right, params wrong.
    first_param_token = tokenizer("pattern>")["input_ids"][0]
    metrics = run_agent_bench(WrongOnToken(first_param_token), tokenizer, tmp_path, sets=("tool_calls",),
                              lengths=("8k",))["sets"]["tool_calls"]["8k"]
    assert (metrics["far_targets"], metrics["fresh_targets"], metrics["near_targets"]) == (4, 2, 2)
    assert metrics["far_accuracy"] == metrics["fresh_accuracy"] == metrics["near_accuracy"] == 0.5
    assert metrics["by_kind"]["name"]["far_accuracy"] == 1.0 and metrics["by_kind"]["param"]["far_accuracy"] == 0.0
    assert metrics["by_kind"]["next"]["far_accuracy"] is None and metrics["by_kind"]["next"]["targets"] == 0
    n_name_tokens = len(tokenizer("search_files>")["input_ids"])
    assert metrics["by_kind"]["name"]["near_mean_logprob"] == -0.5 * n_name_tokens  # summed over tokens


def test_unaligned_tool_target_is_counted(tmp_path, tokenizer):
    record = tool_record()
    target = record["targets"][2]  # the fresh name target, now starting inside "search"
    target["char"][0] += 2
    target["target"] = record["text"][target["char"][0]:target["char"][1]]
    write_jsonl(tmp_path, [record], config="tool_calls")
    metrics = run_agent_bench(OracleBackend(), tokenizer, tmp_path, sets=("tool_calls",),
                              lengths=("8k",))["sets"]["tool_calls"]["8k"]
    assert (metrics["targets"], metrics["scored"], metrics["unaligned"]) == (6, 5, 1)
    assert (metrics["fresh_targets"], metrics["fresh_scored"]) == (2, 1)


@pytest.mark.parametrize("change, message", [
    (lambda r: r["targets"][0].update(kind="call"), "targets[0].kind': 'call' is not one of"),
    (lambda r: r["targets"][0].update(target="search"), "targets[0].char'"),
    (lambda r: r["targets"][0].update(fresh=True), "targets[0].fresh': a fresh target must be far"),
    (lambda r: r["targets"][1].update(definition_id="tool:nope"), "no definition 'tool:nope'"),
    (lambda r: r["definitions"][0].update(text="{}"), "definitions[0].char'"),
    (lambda r: r["sources"][0].pop("revision"), "sources[0].revision': missing"),
])
def test_tool_calls_schema_errors(tmp_path, change, message):
    record = tool_record("bad-001")
    change(record)
    write_jsonl(tmp_path, [record], config="tool_calls")
    with pytest.raises(DataError) as error:
        load_split(tmp_path, "tool_calls", "8k")
    assert "8k.jsonl, line 1 (id 'bad-001')" in str(error.value) and message in str(error.value)
