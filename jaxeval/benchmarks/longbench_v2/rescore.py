"""`jaxeval score --benchmark longbench_v2`: pred.py's result file, scored as result.py scores it.

Rows: pred.py's JSONL (or a JSON array, which result.py also reads), each with _id, difficulty,
length, answer and response; pred and judge, where present, are recomputed from the response (and
the stored judge compared). jaxeval's --log_samples rows of the generation tasks are such rows.
Writes result.txt in result.py's layout (one row, named after the file) and longbench_v2_result.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from jaxeval.io.rows import read_jsonl_file
from jaxeval.benchmarks.longbench_v2.data import require_strings
from jaxeval.benchmarks.longbench_v2.prompts import extract_answer
from jaxeval.benchmarks.longbench_v2.scoring import COLUMNS, result_table
from jaxeval.errors import DataError
from jaxeval.io.inputs import read_text
from jaxeval.io.json_files import write_json_atomic

NEEDED = ("_id", "difficulty", "length", "answer", "response")


def read_rows(path: str | Path) -> list[tuple[dict, str]]:
    text = read_text(path)
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return [(row, f"{path}, item {i}") for i, row in enumerate(whole)]
    return list(read_jsonl_file(path))


def score_row(row, where: str) -> dict:
    require_strings(row, NEEDED, where)
    pred = extract_answer(row["response"])
    return {"_id": row["_id"], "difficulty": row["difficulty"], "length": row["length"], "answer": row["answer"],
            "pred": pred, "judge": pred == row["answer"], "stored_judge": row.get("judge")}


def result_txt(name: str, table: dict) -> str:
    """result.py's result.txt for one file (a bucket it would divide by zero for: n/a)."""
    cells = ["n/a" if table[c] is None else str(table[c]) for c in COLUMNS]
    return "Model\tOverall\tEasy\tHard\tShort\tMedium\tLong\n" + "\t".join([name, *cells])


def rescore_predictions(path: str | Path, compensated: bool = False, output_dir: str | Path | None = None) -> dict:
    rows = [score_row(row, where) for row, where in read_rows(path)]
    if not rows:
        raise DataError(f"{path}: no rows to score")
    stored = [r for r in rows if isinstance(r["stored_judge"], bool)]
    result = {"table": result_table(rows, compensated), "compensated": compensated, "source": str(path),
              "judge_check": {"compared": len(stored), "differing": sum(r["judge"] != r["stored_judge"] for r in stored)},
              "rows": rows, "written": {}}
    if output_dir is not None:
        name = ".".join(Path(path).name.split(".")[:-1])  # result.py's model name
        out = Path(output_dir)
        (out / "result.txt").write_text(result_txt(name, result["table"]), encoding="utf-8")
        write_json_atomic(out / "longbench_v2_result.json", result)
        result["written"] = {"result_txt": str(out / "result.txt"), "results": str(out / "longbench_v2_result.json")}
    return result
