"""Record schemas of longctx-agent-bench, and the check that a raw record follows its config's.

A schema is data: a dict from field name to a spec. Specs are `str`, `int`, `bool`, `STR_LIST`,
`Span("text")` (a [start, end) pair of ints inside the named text field), a nested dict (a
struct) or `ListOf(dict)` (a list of structs). Fields not in the schema (`qwen_*` ids, extra
metadata of the published files) are allowed and ignored here.

Only `facts` is filled in; tool_calls and rules_* get their schemas beside it when they are
implemented (see specs/agent-bench.md for their fields).
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

# config -> item schema. Configs of the card that are not implemented yet are absent.
SCHEMAS: dict[str, dict[str, Any]] = {"facts": FACTS}


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


def _check_facts_strings(record: dict, where: str) -> None:
    text = record["text"]
    for index, target in enumerate(record["targets"]):
        for span_field, string_field in (("answer_char", "answer"), ("fact_char", "fact")):
            start, end = target[span_field]
            if text[start:end] != target[string_field]:
                raise DataError(
                    f"{where}, field 'targets[{index}].{span_field}': text[{start}:{end}] is "
                    f"{text[start:end]!r}, not the {string_field} {target[string_field]!r}")
