"""Build the embedded OpenAI-MRCR stand-in sample: synthetic rows in the dataset's row format.

    python scripts/build_mrcr_sample.py [--text_dir ../shared/data/text] [--out jaxeval/assets/mrcr_sample]

Writes `<out>/mrcr_sample.jsonl` (one row per line: prompt, answer, random_string_to_prepend,
n_needles, desired_msg_index, total_messages, n_chars, date_added) and `<out>/SOURCE.md`. Each
row is a conversation of "write a <form> about <topic>" requests answered with speeches from Tiny
Shakespeare (public domain); n_needles of the requests are identical, and the last user turn asks
for the k-th of them after a random prefix, as MRCR's rows do (our wording). Three rows per needle
count (2, 4, 8), of growing length. Deterministic: the same file on every run.
"""

from __future__ import annotations

import argparse
import json
import random
import string
from pathlib import Path

FORMS = ("poem", "short story", "riddle", "speech", "letter", "song")
TOPICS = ("tapirs", "lighthouses", "copper kettles", "winter markets", "clockmakers", "salt marshes",
          "paper boats", "mountain goats", "old libraries", "harbour bells")
ORDINALS = ("1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th")
TURNS = {2: (6, 16, 40), 4: (8, 20, 44), 8: (12, 24, 48)}  # filler requests per row, per needle count

SOURCE_MD = """# OpenAI-MRCR embedded stand-in sample

`mrcr_sample.jsonl`: nine synthetic rows (three each with 2, 4 and 8 needles) in the row format
of the openai/mrcr dataset (prompt as JSON text of the message list, answer, random_string_to_prepend,
n_needles, desired_msg_index, total_messages, n_chars, date_added). Built by
`scripts/build_mrcr_sample.py` (fixed seed; rerunning it gives the same file).

These are **not** OpenAI-MRCR rows: the requests and the final instruction are our own wording,
and the assistant turns are speeches from Tiny Shakespeare. They exist so that
`jaxeval run --tasks mrcr` runs offline on CPU with the embedded model; their scores mean
nothing about a model's long-context ability, and the results say the stand-in sample was used.

## Source and licence
Tiny Shakespeare (karpathy/char-rnn, data/tinyshakespeare/input.txt, commit
6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e): Shakespeare's plays, public domain.
"""


def speeches(text: str) -> list[str]:
    found = [block.strip() for block in text.split("\n\n")]
    return [block for block in found if 120 <= len(block) <= 700]


def build_row(rng: random.Random, pool: list[str], needles: int, filler: int) -> dict:
    form, topic = rng.choice(FORMS), rng.choice(TOPICS)
    requests = [(form, topic)] * needles
    while len(requests) < needles + filler:
        other = (rng.choice(FORMS), rng.choice(TOPICS))
        if other != (form, topic):
            requests.append(other)
    rng.shuffle(requests)
    answers = rng.sample(pool, len(requests))
    messages, needle_indices = [], []
    for (f, t), reply in zip(requests, answers):
        messages.append({"role": "user", "content": f"write a {f} about {t}"})
        if (f, t) == (form, topic):
            needle_indices.append(len(messages))
        messages.append({"role": "assistant", "content": reply})
    k = rng.randrange(needles)
    prefix = "".join(rng.choices(string.ascii_letters + string.digits, k=10))
    messages.append({"role": "user", "content": f"Prepend {prefix} to the {ORDINALS[k]} (1 indexed) {form} about "
                                                f"{topic}. Do not include any other text in your response."})
    prompt = json.dumps(messages, ensure_ascii=False)
    return {"prompt": prompt, "answer": prefix + messages[needle_indices[k]]["content"],
            "random_string_to_prepend": prefix, "n_needles": needles, "desired_msg_index": needle_indices[k],
            "total_messages": len(messages), "n_chars": sum(len(m["content"]) for m in messages),
            "date_added": "jaxeval-synthetic"}


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser()
    parser.add_argument("--text_dir", default=str(here.parents[1] / "shared" / "data" / "text"))
    parser.add_argument("--out", default=str(here.parent / "jaxeval" / "assets" / "mrcr_sample"))
    args = parser.parse_args()
    pool = speeches((Path(args.text_dir) / "tinyshakespeare.txt").read_text(encoding="utf-8"))
    rng = random.Random(2604)
    rows = [build_row(rng, pool, n, filler) for n, sizes in TURNS.items() for filler in sizes]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mrcr_sample.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                           encoding="utf-8")
    (out / "SOURCE.md").write_text(SOURCE_MD, encoding="utf-8")
    print(f"wrote {len(rows)} rows to {out / 'mrcr_sample.jsonl'}")


if __name__ == "__main__":
    main()
