"""The 21 LongBench v1 datasets and the 13 LongBench-E ones: what each needs to run and score.

Everything comes from the official config files and our summary of the official scripts,
shipped in jaxeval/assets/longbench_config/ (see its SOURCE.md); nothing here is retyped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from jaxeval.errors import ConfigError, DataError

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CONFIG_DIR = ASSETS / "longbench_config"
SHIPPED_SAMPLE = ASSETS / "longbench_sample"  # embedded sample, official file names and schema
HUB_ID = "THUDM/LongBench"
E_SUFFIX = "_e"
BUCKETS = ("0-4k", "4-8k", "8k+")  # LongBench-E length buckets, in result.json order
LANGUAGE_TABLES = ("en", "zh")  # the README's two category tables


@dataclasses.dataclass(frozen=True)
class LongBenchTask:
    name: str  # the v1 dataset name, as in pred.py, eval.py and result.json ("repobench-p")
    language: str  # "en", "zh" or "code"
    category: str  # README category ("Single-Document QA", ...)
    metric: str  # name of the official metric function ("qa_f1_score", ...)
    max_new_tokens: int
    prompt_template: str  # str.format template with {context} and {input}, byte for byte
    skip_chat_template: bool  # few-shot and code sets are prompted as plain continuations
    first_line_only: bool  # eval scores only the prediction's first line (trec/triviaqa/samsum/lsht)
    in_longbench_e: bool


def _read_config(name: str):
    path = CONFIG_DIR / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise DataError(f"{path}: jaxeval's packaged LongBench config is unreadable ({error})") from None


@functools.cache
def _meta() -> dict:
    return _read_config("longbench_meta.json")


def _build_tasks() -> dict[str, LongBenchTask]:
    meta, prompts, max_new = _meta(), _read_config("dataset2prompt.json"), _read_config("dataset2maxlen.json")
    tasks = {}
    for name in meta["dataset_order_official"]:
        info = meta["datasets"][name]
        tasks[name] = LongBenchTask(
            name=name, language=info["language_group"], category=info["category"],
            metric=info["metric"], max_new_tokens=max_new[name], prompt_template=prompts[name],
            skip_chat_template=name in meta["skip_chat_template"],
            first_line_only=name in meta["first_line_only_at_scoring"],
            in_longbench_e=name in meta["longbench_e_datasets"])
    return tasks


TASKS: Mapping[str, LongBenchTask] = MappingProxyType(_build_tasks())
DATASETS: tuple[str, ...] = tuple(TASKS)  # the official order of pred.py and the README
E_DATASETS: tuple[str, ...] = tuple(name for name in DATASETS if TASKS[name].in_longbench_e)
CONFIGS: tuple[str, ...] = DATASETS + tuple(name + E_SUFFIX for name in E_DATASETS)  # the 34 HF configs
# Official models' prompt budgets (their window minus 500): the truncation length of §5.
MODEL_PROMPT_BUDGETS: Mapping[str, int] = MappingProxyType(_read_config("model2maxlen.json"))
# trec and lsht class lists as the official data carries them (used to build samples and check).
ALL_CLASSES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {name: tuple(classes) for name, classes in _read_config("all_classes.json").items()
     if not name.startswith("_")})


def category_members(language_table: str) -> dict[str, tuple[str, ...]]:
    """Category -> datasets in the README's en or zh table (code sets appear in both)."""
    return {category: tuple(by_table[language_table])
            for category, by_table in _meta()["categories"].items()}


def reference_scores() -> dict:
    """The README's published numbers (per dataset and per category), for reports."""
    return _meta()["reference_scores_readme"]


def config_name(dataset: str, e: bool) -> str:
    """The HF config / data file stem of a dataset: "qasper" or "qasper_e"."""
    return dataset + E_SUFFIX if e else dataset


def dataset_of_config(config: str) -> str:
    """The v1 dataset name of a config: "qasper_e" -> "qasper" (no v1 name ends in "_e")."""
    return config.removesuffix(E_SUFFIX)


def check_datasets(datasets, e: bool) -> tuple[str, ...]:
    """The requested v1 dataset names (a sequence or "a,b,c"), checked (LongBench-E takes only its 13)."""
    available = E_DATASETS if e else DATASETS
    chosen = tuple(name.strip() for name in datasets.split(",") if name.strip()) \
        if isinstance(datasets, str) else tuple(datasets)
    for name in chosen:
        if name not in available:
            hint = " (LongBench-E has no such set)" if e and name in DATASETS else ""
            raise ConfigError(f"unknown LongBench{'-E' if e else ''} dataset '{name}'{hint}; "
                            f"available: {', '.join(available)}")
    return chosen


# The card gives lengths in words (English, code) and characters (Chinese); a plan without the
# data turns them into tokens at these rates (Llama-family tokenizers; a proxy, said so).
TOKENS_PER_LENGTH_UNIT = {"en": 1.3, "code": 1.3, "zh": 1.0}
E_BUCKET_LENGTHS = {"0-4k": 2000, "4-8k": 6000, "8k+": 12000}  # a length in the bucket's middle (8k+: 12k)


def planned_units(data: str | None, datasets: str | None, e: bool):
    """LongBench without its data (`jaxeval plan`): the card's item counts per dataset (LongBench-E:
    per length bucket) at the card's average length (LongBench-E: the bucket's middle), each item
    generating the dataset's max_new_tokens. None when the data is here (or the shipped sample runs)."""
    from pathlib import Path

    from jaxeval.benchmarks.base import PlannedTask, PlannedUnit

    if data is None or (data != HUB_ID and Path(data).exists()):
        return None
    chosen = check_datasets(datasets, e) if datasets else (E_DATASETS if e else DATASETS)
    units = []
    for name in chosen:
        info, rate = _meta()["datasets"][name], TOKENS_PER_LENGTH_UNIT[TASKS[name].language]
        task = "longbench_e" if e else "longbench"
        if e:
            units += [PlannedUnit(f"{task}/{name}/{bucket}", count, int(E_BUCKET_LENGTHS[bucket] * rate),
                                  TASKS[name].max_new_tokens)
                      for bucket, count in info["longbench_e_bucket_counts"].items()]
        else:
            units.append(PlannedUnit(f"{task}/{name}", info["n_samples"], int(info["avg_length_taskmd"] * rate),
                                     TASKS[name].max_new_tokens))
    return PlannedTask(tuple(units), "LongBench's card: items per dataset" + (" and length bucket" if e else "")
                       + (", lengths at each bucket's middle" if e else ", lengths at its average")
                       + " (words x 1.3 for English and code, characters x 1.0 for Chinese, as tokens)")
