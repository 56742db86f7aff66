"""result.py's table: overall, easy, hard, short, medium, long accuracy in percent.

As result.py: a row counts int(judge); difficulty other than "easy" is hard and length other than
short/medium is long; each figure is round(100 * correct / rows, 1) and the overall denominator is
the number of rows given. compensated=True counts 0.25 for a row whose pred is None (result.py's
switch, off there). Where result.py divides by zero (a bucket with no row) the figure is None.
"""

from __future__ import annotations

from typing import Sequence

COLUMNS = ("overall", "easy", "hard", "short", "medium", "long")


def row_credit(row: dict, compensated: bool = False) -> float:
    if compensated and row.get("pred") is None:
        return 0.25
    return int(row["judge"])


def bucket_of(row: dict) -> tuple[str, str]:
    difficulty = "easy" if row["difficulty"] == "easy" else "hard"
    length = row["length"] if row["length"] in ("short", "medium") else "long"
    return difficulty, length


def result_table(rows: Sequence[dict], compensated: bool = False) -> dict:
    sums = {name: [0.0, 0] for name in COLUMNS}
    for row in rows:
        credit = row_credit(row, compensated)
        for name in ("overall", *bucket_of(row)):
            sums[name][0] += credit
            sums[name][1] += 1
    table = {name: (round(100 * total / count, 1) if count else None) for name, (total, count) in sums.items()}
    table["counts"] = {name: count for name, (_, count) in sums.items()}
    return table


def format_table(table: dict, label: str) -> str:
    cells = "  ".join(f"{name} {'n/a' if table[name] is None else table[name]}" for name in COLUMNS)
    counts = ", ".join(f"{name} {table['counts'][name]}" for name in COLUMNS[1:])
    return f"{label}: {cells}\n  rows: {table['counts']['overall']} ({counts})"
