"""Build the embedded LongBench v2 stand-in sample: eight four-choice items in the dataset's layout.

    python scripts/build_longbench_v2_sample.py [--text_dir ../shared/data/text] [--out jaxeval/assets/longbench_v2_sample]

Writes `<out>/data.json` (a JSON array like the dataset's data.json: _id, domain, sub_domain,
difficulty, length, question, choice_A-D, answer, context) and `<out>/SOURCE.md`. Each context is
Tiny Shakespeare (public domain) with one planted fact about a fictional town; the question asks
for it, the three wrong choices are other planted names. Every (difficulty, length) pair occurs;
the labels are nominal (contexts are a few thousand characters). Deterministic.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from pathlib import Path

TOWNS = ("Tessaly", "Norwick", "Bramholt", "Ostrow", "Kelvara", "Dunmere", "Halloway", "Pellin")
NAMES = ("Arvelle Quint", "Corwin Hale", "Mara Fenn", "Tobias Renn", "Ilse Varga", "Odile Marsh", "Piet Lowe",
         "Jory Amsel", "Wenna Stroud", "Calder Ives")
ROLES = ("lighthouse keeper", "bell ringer", "ferry master", "town archivist")
SIZES = {"short": 2500, "medium": 6000, "long": 11000}  # characters of context
SOURCE_MD = """# LongBench v2 embedded stand-in sample

`data.json`: eight items in the layout of the THUDM/LongBench-v2 data.json (_id, domain,
sub_domain, difficulty, length, question, choice_A-D, answer, context). Built by
`scripts/build_longbench_v2_sample.py` (fixed seed; rerunning it gives the same file).

These are **not** LongBench v2 items: each context is a stretch of Tiny Shakespeare with one
planted sentence about a fictional town, and the question asks for it. They exist so that
`jaxeval run --tasks longbench_v2` runs offline on CPU with the embedded model; their scores
mean nothing about a model, and the results say the stand-in sample was used. The difficulty
and length labels are nominal: every (easy/hard, short/medium/long) pair occurs.

## Source and licence
Tiny Shakespeare (karpathy/char-rnn, data/tinyshakespeare/input.txt, commit
6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e): Shakespeare's plays, public domain.
"""


def build(text: str) -> list[dict]:
    rng = random.Random(2605)
    labels = [(d, n) for n in SIZES for d in ("easy", "hard")] + [("hard", "long"), ("easy", "short")]
    items = []
    for number, (difficulty, length) in enumerate(labels):
        start = rng.randrange(0, len(text) - 20000)
        context = text[start:start + SIZES[length]]
        context = context[context.index("\n\n") + 2:context.rindex("\n\n")]
        town, role = TOWNS[number], rng.choice(ROLES)
        names = rng.sample(NAMES, 4)
        fact = f"\n\nIn the town of {town}, the {role} was {names[0]}.\n\n"
        paragraphs = context.split("\n\n")
        at = rng.randrange(1, len(paragraphs))
        context = "\n\n".join(paragraphs[:at]) + fact + "\n\n".join(paragraphs[at:])
        order = rng.sample(range(4), 4)
        choices = [names[i] for i in order]
        item = {"domain": "Single-Document QA", "sub_domain": "Literary", "difficulty": difficulty, "length": length,
                "question": f"Who was the {role} of {town}?",
                **{f"choice_{letter}": choice for letter, choice in zip("ABCD", choices)},
                "answer": "ABCD"[order.index(0)], "context": context}
        item = {"_id": hashlib.sha256(json.dumps(item, sort_keys=True).encode()).hexdigest()[:24], **item}
        items.append(item)
    return items


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--text_dir", default=str(here.parents[1] / "shared" / "data" / "text"))
    parser.add_argument("--out", default=str(here.parent / "jaxeval" / "assets" / "longbench_v2_sample"))
    args = parser.parse_args()
    items = build((Path(args.text_dir) / "tinyshakespeare.txt").read_text(encoding="utf-8"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "data.json").write_text(json.dumps(items, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (out / "SOURCE.md").write_text(SOURCE_MD, encoding="utf-8")
    print(f"wrote {len(items)} items to {out / 'data.json'}")


if __name__ == "__main__":
    main()
