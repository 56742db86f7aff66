"""HELMET's datasets, categories and run units, read from the shipped upstream config YAMLs.

A config lists parallel comma-separated `datasets`, `test_files`, `demo_files`,
`input_max_length` (L) and `generation_max_length` (G); each tuple is one EvalUnit. The
YAML key `stop_new_line` is read and recorded but never used: HELMET's flag is `stop_newline`,
so published runs never stopped at a newline (arguments.py; docs/provenance.md#helmet, quirk P1).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from jaxeval.errors import ConfigError

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "helmet_data"
CONFIG_DIR = ASSETS / "configs"
AGENTICLU_CONFIG_DIR = ASSETS / "agenticlu" / "configs"
SAMPLE_DIR = Path(__file__).resolve().parents[2] / "assets" / "helmet_sample"
HUB_ID = "princeton-nlp/HELMET"

LENGTHS = {8192: "8k", 16384: "16k", 32768: "32k", 65536: "64k", 131072: "128k", 4096: "4k"}
# The configs of each category: short tiers (8k-64k) and the 128k one.
CATEGORY_CONFIGS = {
    "recall": ("recall_short", "recall"),
    "rag": ("rag_short", "rag"),
    "rerank": ("rerank_short", "rerank"),
    "cite": ("cite_short", "cite"),
    "longqa": ("longqa_short", "longqa"),
    "summ": ("summ_short", "summ"),
    "icl": ("icl_short", "icl"),
}
CATEGORIES = tuple(CATEGORY_CONFIGS)


def family(dataset: str) -> str:
    """The loader family of a dataset name, in HELMET's own dispatch order (substring tests)."""
    if "popqa" in dataset or any(x in dataset for x in ("nq", "hotpotqa", "triviaqa")):
        return "rag"
    if dataset == "json_kv":
        return "json_kv"
    for marker, name in (("narrativeqa", "narrativeqa"), ("msmarco", "rerank"), ("alce", "alce"),
                         ("icl", "icl"), ("multi_lexsum", "multi_lexsum"), ("ruler", "ruler")):
        if marker in dataset:
            return name
    if "infbench" in dataset:
        for marker in ("qa_eng", "choice_eng", "sum_eng"):
            if marker in dataset:
                return f"infbench_{marker}"
    raise ConfigError(f"unknown HELMET dataset {dataset!r}")


CATEGORY_OF_FAMILY = {
    "json_kv": "recall", "ruler": "recall", "rag": "rag", "rerank": "rerank", "alce": "cite",
    "narrativeqa": "longqa", "infbench_qa_eng": "longqa", "infbench_choice_eng": "longqa",
    "infbench_sum_eng": "summ", "multi_lexsum": "summ", "icl": "icl",
}
# Families whose upstream template puts two newlines between the user and system templates.
DOUBLE_NEWLINE_JOIN = ("infbench_qa_eng", "infbench_choice_eng", "infbench_sum_eng", "multi_lexsum", "alce")


def category(dataset: str) -> str:
    return CATEGORY_OF_FAMILY[family(dataset)]


def dataset_key(dataset: str) -> str:
    """The dataset name without its length suffix, as collect_results names columns
    (narrativeqa_7892 -> narrativeqa, alce_asqa_30 -> alce_asqa); other names unchanged."""
    fam = family(dataset)
    if fam in ("narrativeqa", "infbench_qa_eng", "infbench_choice_eng", "infbench_sum_eng", "multi_lexsum", "alce"):
        return dataset.rsplit("_", 1)[0]
    if fam == "icl":
        return re.sub(r"_\d+shot.*$", "", dataset)
    return dataset


def length_label(input_max_length: int) -> str:
    return LENGTHS.get(input_max_length, str(input_max_length))


@dataclasses.dataclass(frozen=True)
class EvalUnit:
    """One (dataset, file, L, G) evaluation of a config."""

    dataset: str
    test_file: str
    demo_file: str
    input_max_length: int
    generation_max_length: int
    shots: int
    use_chat_template: bool
    max_test_samples: int | None
    config: str
    stop_new_line_in_yaml: bool = False  # recorded; never applied (P1)

    @property
    def length(self) -> str:
        return length_label(self.input_max_length)

    @property
    def category(self) -> str:
        return category(self.dataset)


def _split(value, n: int, field: str, where: str) -> list[str]:
    parts = str(value).split(",") if value is not None else [""]
    if len(parts) == 1:
        parts = parts * n
    if len(parts) != n:
        raise ConfigError(f"{where}: field '{field}' has {len(parts)} entries for {n} datasets")
    return [p.strip() for p in parts]


def load_config(name_or_path: str | Path, agenticlu: bool = False) -> list[EvalUnit]:
    """The EvalUnits of a shipped config name ("recall_short") or a YAML path."""
    import yaml

    path = Path(name_or_path)
    if not path.suffix:
        path = (AGENTICLU_CONFIG_DIR if agenticlu else CONFIG_DIR) / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: no such HELMET config")
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict) or "datasets" not in raw:
        raise ConfigError(f"{path}: not a HELMET config (field 'datasets' missing)")
    datasets = _split(raw["datasets"], len(str(raw["datasets"]).split(",")), "datasets", str(path))
    n = len(datasets)
    fields = {f: _split(raw.get(f, ""), n, f, str(path))
              for f in ("test_files", "demo_files", "input_max_length", "generation_max_length")}
    try:
        lengths = [int(x) for x in fields["input_max_length"]]
        gens = [int(x) for x in fields["generation_max_length"]]
    except ValueError:
        raise ConfigError(f"{path}: input_max_length / generation_max_length must be integers") from None
    return [EvalUnit(dataset=d, test_file=t, demo_file=m, input_max_length=l, generation_max_length=g,
                     shots=int(raw.get("shots", 0)), use_chat_template=bool(raw.get("use_chat_template", False)),
                     max_test_samples=raw.get("max_test_samples"), config=path.stem,
                     stop_new_line_in_yaml=bool(raw.get("stop_new_line", False)))
            for d, t, m, l, g in zip(datasets, fields["test_files"], fields["demo_files"], lengths, gens)]


def helmet_units(categories=CATEGORIES, lengths=None, agenticlu: bool = False) -> list[EvalUnit]:
    """Every EvalUnit of the chosen categories, optionally only the chosen length labels."""
    units = []
    for name in categories:
        if name not in CATEGORY_CONFIGS:
            raise ConfigError(f"unknown HELMET category {name!r}; choose from {', '.join(CATEGORIES)}")
        for config in CATEGORY_CONFIGS[name]:
            units += load_config(config, agenticlu=agenticlu)
    if lengths is not None:
        unknown = set(lengths) - set(LENGTHS.values())
        if unknown:
            raise ConfigError(f"unknown HELMET length {sorted(unknown)[0]!r}; choose from 8k,16k,32k,64k,128k")
        units = [u for u in units if u.length in lengths]
    return units
