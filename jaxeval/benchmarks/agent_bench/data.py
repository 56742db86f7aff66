"""Loading longctx-agent-bench items: a local folder in the hub layout, or the hub through `datasets`.

A local folder holds `<config>/<split>*.parquet` (as the hub stores configs, e.g.
`facts/8k-00000-of-00001.parquet`) or `<config>/<split>*.jsonl` for hand-made items. Both
sources go through the same record check and conversion, so they give identical items.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Iterable

from jaxeval.benchmarks.agent_bench.schema import SCHEMAS, validate_record
from jaxeval.io.rows import read_jsonl_file, read_parquet_rows
from jaxeval.errors import DataError

CONFIGS = ("facts", "tool_calls", "rules_en", "rules_cs", "rules_de")  # as the card lists them
SPLITS = ("8k", "32k")
HUB_ID = "thinletter/longctx-agent-bench"
SHIPPED_DATA = Path(__file__).resolve().parents[2] / "assets" / "agent_bench_sample"
_HUB_ID_PATTERN = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


@dataclasses.dataclass(frozen=True)
class FactsTarget:
    answer_char: tuple[int, int]  # [start, end) of the answer, e.g. " 48213.", in the text
    answer: str
    fact_char: tuple[int, int]  # [start, end) of the planted fact sentence
    fact: str
    distance_tokens: int  # tokens from the fact's end to the answer (builder's tokenizer)


@dataclasses.dataclass(frozen=True)
class FactsItem:
    id: str
    text: str
    targets: tuple[FactsTarget, ...]
    source: dict  # {dataset, config, split, articles}: carried through, never scored
    stored_ids_field: str | None = None  # name of the item's `qwen_*` token-id field, if any
    stored_ids: tuple[int, ...] | None = None  # its ids (for --mode auto)
    origin: str = dataclasses.field(default="", compare=False)  # file and row, for messages


@dataclasses.dataclass(frozen=True)
class ToolTarget:
    char: tuple[int, int]  # [start, end) of the target in the text
    target: str
    kind: str  # name, param, next, command
    far: bool
    fresh: bool
    definition_id: str
    distance_tokens: int


@dataclasses.dataclass(frozen=True)
class ToolCallsItem:
    id: str
    text: str
    definitions: tuple[dict, ...]  # {id, text, char}: carried through, never scored
    targets: tuple[ToolTarget, ...]
    sources: tuple[dict, ...]
    stored_ids_field: str | None = None
    stored_ids: tuple[int, ...] | None = None
    origin: str = dataclasses.field(default="", compare=False)


@dataclasses.dataclass(frozen=True)
class RuleTarget:
    char_without_rule: int  # where the governed action starts in text_without_rule
    char_with_rule: int  # ... and in text_with_rule
    expected_text: str  # e.g. " rg": its first token is scored
    original_text: str
    distance_tokens: int
    first: bool
    mentioned: bool


@dataclasses.dataclass(frozen=True)
class RulesItem:
    id: str
    text_without_rule: str
    text_with_rule: str
    rule: str
    rule_char: tuple[int, int]  # span of the rule line in text_with_rule
    family: str  # substitution, redirect, required
    placement: str  # system, user
    lang: str
    context_id: str
    targets: tuple[RuleTarget, ...]
    sources: tuple[dict, ...]
    origin: str = dataclasses.field(default="", compare=False)


def load_split(data: str | Path, config: str, split: str) -> list:
    """Every item of one config and split, checked against the config's schema.

    data: a local folder in the hub layout, or a hub id such as "thinletter/longctx-agent-bench"
    (then `datasets.load_dataset(data, config, split=split)`).
    """
    if config not in SCHEMAS:
        raise DataError(f"config '{config}' is not supported yet; available: {', '.join(SCHEMAS)}")
    folder = Path(data)
    if folder.exists():
        if not folder.is_dir():
            raise DataError(f"{folder}: expected a folder laid out as the hub repo "
                            f"(<config>/<split>*.parquet), got a file")
        items = items_from_records(_read_local(folder, config, split), config)
    elif isinstance(data, str) and _HUB_ID_PATTERN.fullmatch(data) and not data.startswith("."):
        items = items_from_records(read_hub_records(data, config, split), config)
    else:
        raise DataError(f"{data}: no such folder, and not a hub id (owner/name)")
    if not items:  # scoring nothing would report "0 of 0" as if it were a result
        raise DataError(f"{data}: config '{config}', split '{split}' holds no items")
    return items


def split_files(folder: Path, config: str, split: str) -> list[Path]:
    """The Parquet and JSONL files of one split, in name order (shards in order)."""
    config_dir = folder / config
    files = sorted(
        path for path in (config_dir.iterdir() if config_dir.is_dir() else ())
        if path.suffix in (".parquet", ".jsonl")
        and (path.stem == split or path.name.startswith(f"{split}-"))
    )
    if not files:
        raise DataError(f"{config_dir}: no {split}*.parquet or {split}*.jsonl file for config "
                        f"'{config}', split '{split}'")
    return files


def _read_local(folder: Path, config: str, split: str) -> Iterable[tuple[dict, str]]:
    for path in split_files(folder, config, split):
        reader = read_parquet_rows if path.suffix == ".parquet" else read_jsonl_file
        yield from reader(path)


def read_hub_records(data: str, config: str, split: str,
                     cache_dir: str | None = None) -> Iterable[tuple[dict, str]]:
    """Records of a hub dataset (or a local folder `datasets` can read as one), with their origin."""
    import datasets

    try:
        dataset = datasets.load_dataset(data, config, split=split, cache_dir=cache_dir)
    except Exception as error:  # datasets raises many kinds; the user needs the one line
        raise DataError(f"{data}: could not load config '{config}', split '{split}' through "
                        f"datasets ({type(error).__name__}: {error})") from None
    for index, row in enumerate(dataset.to_list()):
        yield row, f"{data} (hub), config '{config}', split '{split}', row {index}"


def items_from_records(records: Iterable[tuple[dict, str]], config: str) -> list[FactsItem]:
    """Check every (record, origin) and convert it; ids must be unique within the split."""
    items, seen = [], {}
    for record, origin in records:
        validate_record(record, config, origin)
        if record["id"] in seen:
            raise DataError(f"{origin}, field 'id': '{record['id']}' is used twice in this split "
                            f"(first at {seen[record['id']]})")
        seen[record["id"]] = origin
        items.append(ITEM_BUILDERS[config](record, origin))
    return items


def _stored_ids(record: dict) -> tuple[str | None, tuple[int, ...] | None]:
    """The item's `qwen_*` token ids. Their name is not published, so any one `qwen_*` list
    of ints is taken; none, or more than one, means there are none to use."""
    found = [(name, value) for name, value in record.items()
             if name.startswith("qwen_") and isinstance(value, (list, tuple)) and value
             and all(isinstance(v, int) and not isinstance(v, bool) for v in value)]
    if len(found) != 1:
        return None, None
    name, value = found[0]
    return name, tuple(value)


def _facts_item(record: dict[str, Any], origin: str) -> FactsItem:
    stored_ids_field, stored_ids = _stored_ids(record)
    source = record["source"]
    return FactsItem(
        id=record["id"],
        text=record["text"],
        targets=tuple(
            FactsTarget(
                answer_char=tuple(t["answer_char"]),
                answer=t["answer"],
                fact_char=tuple(t["fact_char"]),
                fact=t["fact"],
                distance_tokens=t["distance_tokens"],
            )
            for t in record["targets"]
        ),
        source={**source, "articles": list(source["articles"])},
        stored_ids_field=stored_ids_field,
        stored_ids=stored_ids,
        origin=origin,
    )


def _sources(record: dict) -> tuple[dict, ...]:
    return tuple(dict(source) for source in record["sources"])


def _tool_calls_item(record: dict[str, Any], origin: str) -> ToolCallsItem:
    stored_ids_field, stored_ids = _stored_ids(record)
    return ToolCallsItem(
        id=record["id"], text=record["text"],
        definitions=tuple({"id": d["id"], "text": d["text"], "char": tuple(d["char"])}
                          for d in record["definitions"]),
        targets=tuple(ToolTarget(char=tuple(t["char"]), target=t["target"], kind=t["kind"], far=t["far"],
                                 fresh=t["fresh"], definition_id=t["definition_id"],
                                 distance_tokens=t["distance_tokens"]) for t in record["targets"]),
        sources=_sources(record), stored_ids_field=stored_ids_field, stored_ids=stored_ids, origin=origin)


def _rules_item(record: dict[str, Any], origin: str) -> RulesItem:
    return RulesItem(
        id=record["id"], text_without_rule=record["text_without_rule"],
        text_with_rule=record["text_with_rule"], rule=record["rule"], rule_char=tuple(record["rule_char"]),
        family=record["family"], placement=record["placement"], lang=record["lang"],
        context_id=record["context_id"],
        targets=tuple(RuleTarget(**{name: t[name] for name in RuleTarget.__dataclass_fields__})
                      for t in record["targets"]),
        sources=_sources(record), origin=origin)


# config -> record-to-item conversion (beside schema.SCHEMAS).
ITEM_BUILDERS = {"facts": _facts_item, "tool_calls": _tool_calls_item,
                 "rules_en": _rules_item, "rules_cs": _rules_item, "rules_de": _rules_item}
