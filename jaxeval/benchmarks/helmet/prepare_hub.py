"""Write the prepared LongQA / summarisation / ICL files from their source datasets:

    python -m jaxeval.benchmarks.helmet.prepare_hub --data DATA [--categories longqa,summ,icl]
        [--lengths 8k,...] [--llama2_tokenizer meta-llama/Llama-2-7b-hf] [--max_samples 100]

reads the sources through `datasets.load_dataset` (hub, or its cache) and writes
DATA/prepared/<dataset name>.jsonl for every dataset of the chosen configs (see icl.py and
longdoc.py for what is reproduced exactly). Summarisation keypoints stay in HELMET's data
(data/infbench/longbook_sum_eng_keypoints.jsonl, data/multi_lexsum/multi_lexsum_val.jsonl):
pass them to the judge pass with --helmet_keypoints.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jaxeval.benchmarks.helmet.icl import icl_rows, nlu_split, source_of
from jaxeval.benchmarks.helmet.longdoc import infbench_rows, multi_lexsum_rows, narrativeqa_rows
from jaxeval.benchmarks.helmet.tasks import family, helmet_units
from jaxeval.errors import DataError

INFBENCH = "xinrongzhang2022/infinitebench"


def _load(name: str, config: str | None, split: str) -> list[dict]:
    from datasets import load_dataset

    try:
        return load_dataset(name, config, split=split).to_list() if config else \
            load_dataset(name, split=split).to_list()
    except Exception as e:
        raise DataError(f"{name} ({split}): loading failed ({type(e).__name__}: {e})") from None


def build_rows(dataset: str, shots: int, max_samples: int | None, llama2_tokenizer, seed: int = 42) -> list[dict]:
    fam = family(dataset)
    if fam == "icl":
        source = source_of(dataset)
        if source.test_split is None:
            train, test = nlu_split(_load(source.hub_id, source.config, source.train_split), seed)
        else:
            train = _load(source.hub_id, source.config, source.train_split)
            test = _load(source.hub_id, source.config, source.test_split)
        return icl_rows(dataset, train, test, max_samples, seed)
    if fam.startswith("infbench"):
        split = {"infbench_qa_eng": "longbook_qa_eng", "infbench_choice_eng": "longbook_choice_eng",
                 "infbench_sum_eng": "longbook_sum_eng"}[fam]
        return infbench_rows(dataset, _load(INFBENCH, None, split), llama2_tokenizer, shots, max_samples, seed)
    if fam == "narrativeqa":
        return narrativeqa_rows(dataset, _load("narrativeqa", None, "test"), _load("narrativeqa", None, "train"),
                                llama2_tokenizer, shots, max_samples, seed)
    if fam == "multi_lexsum":
        return multi_lexsum_rows(dataset, _load("allenai/multi_lexsum", "v20230518", "validation"),
                                 _load("allenai/multi_lexsum", "v20230518", "train"), llama2_tokenizer, shots,
                                 max_samples, seed)
    raise DataError(f"{dataset}: read from HELMET's released files, not prepared from the hub")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="HELMET data folder (prepared/ is written in it)")
    parser.add_argument("--categories", default="longqa,summ,icl")
    parser.add_argument("--lengths", default=None)
    parser.add_argument("--llama2_tokenizer", default="meta-llama/Llama-2-7b-hf")
    parser.add_argument("--max_samples", type=int, default=None, help="default: each config's max_test_samples")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.llama2_tokenizer)
    units = helmet_units(args.categories.split(","), args.lengths.split(",") if args.lengths else None)
    out_dir = Path(args.data) / "prepared"
    out_dir.mkdir(parents=True, exist_ok=True)
    for unit in {u.dataset: u for u in units}.values():
        rows = build_rows(unit.dataset, unit.shots, args.max_samples or unit.max_test_samples, tokenizer)
        path = out_dir / f"{unit.dataset}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        print(f"wrote {path} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
