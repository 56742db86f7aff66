"""`jaxeval score --benchmark mrcr`: grade saved responses without a model.

Rows: the dataset's fields (prompt, answer, random_string_to_prepend, n_needles, ...) plus
`response`, one JSON object per line (jaxeval's --log_samples rows are such rows too). A row whose
response is not a string (null: the card's grade would raise) is a failed row: 0, counted. A row
with "skipped": true (jaxeval's: longer than the window) is counted, not graded. Bins come from
the prompt and answer (tiktoken o200k_base, else the tokenizer given with --tokenizer), else from
a row's own `bin_tokens`; without either the row is in its needle mean but in no bin.
"""

from __future__ import annotations

from pathlib import Path

from jaxeval.io.rows import read_jsonl_file
from jaxeval.benchmarks.mrcr.data import check_row, parse_messages
from jaxeval.benchmarks.mrcr.grading import BinCounter, bin_of, grade
from jaxeval.benchmarks.mrcr.summary import summarize
from jaxeval.errors import ConfigError, DataError
from jaxeval.io.json_files import write_json_atomic

NO_BIN = "unbinned"


def _counter(tokenizer: str | None) -> BinCounter | None:
    model_tokenizer = None
    if tokenizer:
        from transformers import AutoTokenizer
        try:
            model_tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        except Exception as error:
            raise ConfigError(f"--tokenizer {tokenizer}: cannot load ({type(error).__name__}: {error})") from None
    counter = BinCounter(model_tokenizer)
    return counter if counter.official or model_tokenizer is not None else None


def score_row(row: dict, where: str, counter: BinCounter | None) -> dict:
    check_row(row, where, need_prompt=False)
    if "response" not in row and not row.get("skipped"):
        raise DataError(f"{where}: missing field 'response'")
    if counter is not None and "prompt" in row:
        tokens = counter.count(parse_messages(row["prompt"], where), row["answer"])
    else:
        tokens = row.get("bin_tokens") if isinstance(row.get("bin_tokens"), int) else None
    scored = {"n_needles": row["n_needles"], "bin": bin_of(tokens) if tokens is not None else NO_BIN,
              "bin_tokens": tokens, "skipped": bool(row.get("skipped")), "where": where}
    if scored["skipped"]:
        return {**scored, "score": None, "failed": False}
    response = row["response"]
    if not isinstance(response, str):
        return {**scored, "score": 0.0, "failed": True}
    return {**scored, "score": grade(response, row["answer"], row["random_string_to_prepend"]), "failed": False}


def rescore_predictions(path: str | Path, tokenizer: str | None = None, output_dir: str | Path | None = None) -> dict:
    counter = _counter(tokenizer)
    rows = [score_row(row, where, counter) for row, where in read_jsonl_file(path)]
    if not rows:
        raise DataError(f"{path}: no rows to score")
    result = {"summary": summarize(rows), "scores": [r["score"] for r in rows],
              "bin_tokenizer": counter.name if counter else "none: bins from the rows' bin_tokens where present",
              "source": str(path), "written": {}}
    if output_dir is not None:
        target = Path(output_dir) / "mrcr_scores.json"
        write_json_atomic(target, result)
        result["written"]["scores"] = str(target)
    return result
