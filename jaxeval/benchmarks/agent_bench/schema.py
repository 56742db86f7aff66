"""Record schemas of longctx-agent-bench, and the check that a raw record follows its config's.

A schema is data: a dict from field name to a spec. Specs are `str`, `int`, `bool`, `STR_LIST`,
`Span("text")` (a [start, end) pair of ints inside the named text field), a nested dict (a
struct) or `ListOf(dict)` (a list of structs). Fields not in the schema (`qwen_*` ids, extra
metadata of the published files) are allowed and ignored here.

The fields are the published card's; the encodings it leaves open are jaxeval's reading of it
(docs/provenance.md#agent-bench).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxeval.errors import DataError

STR_LIST = "list of strings"


@dataclasses.dataclass(frozen=True)
class Span:
    text_field: str  # the item field the offsets point into


@dataclasses.dataclass(frozen=True)
class ListOf:
    element: dict[str, Any]


FACTS_TARGET = {
    "answer_char": Span("text"),
    "answer": str,
    "fact_char": Span("text"),
    "fact": str,
    "distance_tokens": int,
}
FACTS_SOURCE = {"dataset": str, "config": str, "split": str, "articles": STR_LIST}
FACTS = {"id": str, "text": str, "targets": ListOf(FACTS_TARGET), "source": FACTS_SOURCE}

SOURCE = {"dataset": str, "revision": str, "license": str, "tokens": int, "documents": int}
TOOL_KINDS = ("name", "param", "next", "command")
TOOL_DEFINITION = {"id": str, "text": str, "char": Span("text")}
TOOL_TARGET = {"char": Span("text"), "target": str, "kind": str, "far": bool, "fresh": bool,
               "definition_id": str, "distance_tokens": int}
TOOL_CALLS = {"id": str, "text": str, "definitions": ListOf(TOOL_DEFINITION),
              "targets": ListOf(TOOL_TARGET), "sources": ListOf(SOURCE)}

RULE_FAMILIES = ("substitution", "redirect", "required")
RULE_PLACEMENTS = ("system", "user")
RULE_LANGS = {"rules_en": "en", "rules_cs": "cs", "rules_de": "de"}
RULE_TARGET = {"char_without_rule": int, "char_with_rule": int, "expected_text": str,
               "original_text": str, "distance_tokens": int, "first": bool, "mentioned": bool}
RULES = {"id": str, "text_without_rule": str, "text_with_rule": str, "rule": str,
         "rule_char": Span("text_with_rule"), "family": str, "placement": str, "lang": str,
         "context_id": str, "targets": ListOf(RULE_TARGET), "sources": ListOf(SOURCE)}

# config -> item schema, as the card lists the configs.
SCHEMAS: dict[str, dict[str, Any]] = {"facts": FACTS, "tool_calls": TOOL_CALLS,
                                      **{config: RULES for config in RULE_LANGS}}


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_value(value: Any, spec: Any, field: str, record: dict, where: str) -> None:
    def fail(problem: str) -> None:
        raise DataError(f"{where}, field '{field}': {problem}")

    if spec is str and not isinstance(value, str):
        fail(f"expected a string, got {_type_name(value)}")
    elif spec is int and not _is_int(value):
        fail(f"expected an integer, got {_type_name(value)}")
    elif spec is bool and not isinstance(value, bool):
        fail(f"expected true or false, got {_type_name(value)}")
    elif spec == STR_LIST:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            fail(f"expected a list of strings, got {_type_name(value)}")
    elif isinstance(spec, Span):
        if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(_is_int(v) for v in value):
            fail(f"expected a [start, end) pair of integers, got {value!r}")
        start, end = value
        text = record.get(spec.text_field)
        if not start < end:
            fail(f"span {list(value)} is empty or reversed; spans are [start, end) with start < end")
        if isinstance(text, str) and not (0 <= start and end <= len(text)):
            fail(f"span {list(value)} lies outside '{spec.text_field}' ({len(text)} characters)")
    elif isinstance(spec, ListOf):
        if not isinstance(value, (list, tuple)):
            fail(f"expected a list, got {_type_name(value)}")
        for index, element in enumerate(value):
            _check_struct(element, spec.element, f"{field}[{index}]", record, where)
    elif isinstance(spec, dict):
        _check_struct(value, spec, field, record, where)


def _check_struct(value: Any, schema: dict[str, Any], prefix: str, record: dict, where: str) -> None:
    if not isinstance(value, dict):
        raise DataError(f"{where}, field '{prefix}': expected a record, got {_type_name(value)}")
    for name, spec in schema.items():
        field = f"{prefix}.{name}" if prefix else name
        if name not in value or value[name] is None:
            raise DataError(f"{where}, field '{field}': missing")
        _check_value(value[name], spec, field, record, where)


def validate_record(record: Any, config: str, where: str) -> None:
    """Raise DataError naming `where` (file and row), the record id and the field if `record` is off.

    Beyond types: every span lies inside its text, and the text under a facts span is the
    span's stated string (answer, fact).
    """
    if config not in SCHEMAS:
        raise DataError(f"{where}: no schema for config '{config}' (known: {', '.join(SCHEMAS)})")
    if isinstance(record, dict) and isinstance(record.get("id"), str):
        where = f"{where} (id '{record['id']}')"
    _check_struct(record, SCHEMAS[config], "", record, where)
    if config == "facts":
        _check_facts_strings(record, where)
    elif config == "tool_calls":
        _check_tool_calls(record, where)
    else:
        _check_rules(record, config, where)


def _check_facts_strings(record: dict, where: str) -> None:
    text = record["text"]
    for index, target in enumerate(record["targets"]):
        for span_field, string_field in (("answer_char", "answer"), ("fact_char", "fact")):
            start, end = target[span_field]
            if text[start:end] != target[string_field]:
                raise DataError(
                    f"{where}, field 'targets[{index}].{span_field}': text[{start}:{end}] is "
                    f"{text[start:end]!r}, not the {string_field} {target[string_field]!r}")


def _check_choice(value: str, choices, field: str, where: str) -> None:
    if value not in choices:
        raise DataError(f"{where}, field '{field}': {value!r} is not one of {', '.join(choices)}")


def _check_tool_calls(record: dict, where: str) -> None:
    text = record["text"]
    definition_ids = set()
    for index, definition in enumerate(record["definitions"]):
        start, end = definition["char"]
        if text[start:end] != definition["text"]:
            raise DataError(f"{where}, field 'definitions[{index}].char': text[{start}:{end}] is not "
                            f"the definition's text {definition['text'][:40]!r}")
        definition_ids.add(definition["id"])
    for index, target in enumerate(record["targets"]):
        field = f"targets[{index}]"
        start, end = target["char"]
        if text[start:end] != target["target"]:
            raise DataError(f"{where}, field '{field}.char': text[{start}:{end}] is "
                            f"{text[start:end]!r}, not the target {target['target']!r}")
        _check_choice(target["kind"], TOOL_KINDS, f"{field}.kind", where)
        if target["fresh"] and not target["far"]:
            raise DataError(f"{where}, field '{field}.fresh': a fresh target must be far")
        if target["definition_id"] not in definition_ids:
            raise DataError(f"{where}, field '{field}.definition_id': no definition "
                            f"{target['definition_id']!r} in this item")


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of a and b."""
    import os.path

    return len(os.path.commonprefix([a, b]))


def _check_rules(record: dict, config: str, where: str) -> None:
    _check_choice(record["family"], RULE_FAMILIES, "family", where)
    _check_choice(record["placement"], RULE_PLACEMENTS, "placement", where)
    if record["lang"] != RULE_LANGS[config]:
        raise DataError(f"{where}, field 'lang': {record['lang']!r} in config {config} "
                        f"(expected {RULE_LANGS[config]!r})")
    start, end = record["rule_char"]
    with_rule = record["text_with_rule"]
    if record["rule"] not in with_rule[start:end]:
        raise DataError(f"{where}, field 'rule_char': text_with_rule[{start}:{end}] does not hold "
                        f"the rule {record['rule'][:40]!r}")
    shared = _common_prefix(with_rule, record["text_without_rule"])
    if shared < start and with_rule[shared:start].strip():
        # the card: the with-rule text is the same session with one rule line added; a separator
        # ("\n", " ") before that line may lie outside rule_char (docs: specs/agent-bench.md), but
        # nothing else may differ before the rule
        raise DataError(f"{where}, field 'rule_char': text_with_rule and text_without_rule differ "
                        f"before the rule (at character {shared}; the rule starts at {start})")
    for index, target in enumerate(record["targets"]):
        for field, text in (("char_without_rule", record["text_without_rule"]),
                            ("char_with_rule", with_rule)):
            char = target[field]
            if not 0 < char <= len(text):
                raise DataError(f"{where}, field 'targets[{index}].{field}': {char} lies outside "
                                f"the text (1..{len(text)})")
        if not target["expected_text"]:
            raise DataError(f"{where}, field 'targets[{index}].expected_text': empty")
        if target["char_with_rule"] < end:
            raise DataError(f"{where}, field 'targets[{index}].char_with_rule': "
                            f"{target['char_with_rule']} lies before the rule's end ({end})")
