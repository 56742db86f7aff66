"""Build the embedded HELMET sample (jaxeval/assets/helmet_sample), in HELMET's released layout.

    python scripts/build_helmet_sample.py [--text_dir ../shared/data/text] [--out jaxeval/assets/helmet_sample]

Files, named as the 8k tier of the shipped configs expects them:
* data/json_kv/test_k105_dep6.jsonl: synthetic JSON key-value retrieval (random UUID keys and
  values; the gold key at a different depth per record), as lost-in-the-middle generates them;
* data/ruler/{niah_multikey_2,niah_multikey_3,niah_multivalue}/validation_8192.jsonl:
  RULER-style needles ("One of the special magic numbers/uuids for KEY is: VALUE.") planted in
  WikiText-2 haystack text;
* data/kilt/{nq,triviaqa,hotpotqa}-dev-multikilt_1000_k50_dep*.jsonl, their k3 train demo files
  and popqa_test_1000_k50_dep6.jsonl / _k3_: cloze questions ("Which word is missing: ...")
  over WikiText-2 paragraphs; the gold paragraph is planted among distractors at two depths;
* prepared/{narrativeqa_7892,infbench_qa_eng_7982,infbench_choice_eng_7982}.jsonl: cloze
  questions over Tiny Shakespeare passages (the multiple-choice one with four options).
Records are small (a few thousand characters) so the embedded model runs them on CPU; they
exercise every code path, not the benchmark's difficulty. Deterministic (fixed seeds).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"^ = ([^=].*) = $")
WORD = re.compile(r"^[A-Za-z]{5,}$")
RECORDS = 4


def wikitext_paragraphs(path: Path) -> list[tuple[str, str]]:
    """(article title, paragraph) of WikiText-2 paragraphs of 300-900 characters, <unk> in neither."""
    title, out = "", []
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = HEADING.match(line)
        if heading:
            title = heading.group(1).strip()
        elif (title and "<unk>" not in title and 300 <= len(line.strip()) <= 900 and "<unk>" not in line
              and not line.strip().startswith("=")):
            out.append((title, line.strip()))
    return out


def cloze(text: str, rng: random.Random) -> tuple[str, str]:
    """(question, answer): a sentence of `text` with one long word blanked out."""
    sentences = [s.strip() for s in re.split(r"(?<= \.) ", text) if len(s.split()) >= 8]
    sentence = rng.choice(sentences or [text])
    words = [w for w in sentence.split() if WORD.match(w)]
    answer = rng.choice(words)
    question = "Which word is missing: " + sentence.replace(answer, "___", 1).rstrip(" .") + "?"
    return question, answer


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128)))


def json_kv(rng: random.Random) -> list[dict]:
    records = []
    for index in range(RECORDS):
        pairs = [(uid(rng), uid(rng)) for _ in range(24)]
        gold = pairs[(index * 7 + 3) % len(pairs)]
        context = "JSON data:\n" + json.dumps(dict(pairs), indent=4)
        demos = [[uid(rng), uid(rng)] for _ in range(3)]
        records.append({"context": context, "question": gold[0], "answer": [gold[1]], "num_kvs": len(pairs),
                        "demos": demos, "id": f"kv-{index}"})
    return records


def haystack(paragraphs, rng: random.Random, n: int = 6) -> list[str]:
    start = rng.randrange(len(paragraphs) - n)
    return [p for _, p in paragraphs[start:start + n]]


def ruler(paragraphs, rng: random.Random, kind: str) -> list[dict]:
    records = []
    for index in range(RECORDS):
        text = haystack(paragraphs, rng)
        words = [w for w in " ".join(text).split() if WORD.match(w)]
        uuids = kind == "niah_multikey_3"
        keys = [uid(rng) if uuids else f"{rng.choice(words).lower()}-{rng.choice(words).lower()}" for _ in range(3)]
        values_per_key = 3 if kind == "niah_multivalue" else 1
        needles, gold = [], []
        for k, key in enumerate(keys):
            for _ in range(values_per_key if k == 0 else 1):
                value = uid(rng) if uuids else str(rng.randrange(1_000_000, 9_999_999))
                needles.append(f"One of the special magic {'uuids' if uuids else 'numbers'} for {key} is: {value}.")
                if k == 0:
                    gold.append(value)
        for needle in needles:
            text.insert(rng.randrange(len(text) + 1), needle)
        records.append({"index": index, "context": " ".join(text), "query": keys[0], "outputs": gold,
                        "type_needle_v": "uuids" if uuids else "numbers", "length": 8192})
    return records


def kilt(paragraphs, rng: random.Random, name: str, train: bool, depths: int) -> list[dict]:
    records = []
    n_ctx = 3 if train else 6
    for index in range(RECORDS if not train else 6):
        title, gold = rng.choice(paragraphs)
        question, answer = cloze(gold, rng)
        distractors = [{"title": t, "text": p} for t, p in rng.sample(paragraphs, n_ctx - 1)]
        for depth in range(1 if train else depths):
            ctxs = list(distractors)
            position = round(depth * (len(ctxs)) / max(1, depths - 1)) if depths > 1 else 0
            ctxs.insert(min(position, len(ctxs)), {"title": title, "text": gold})
            record = {"question": question, "answers": [answer], "ctxs": ctxs, "depth": depth}
            if name != "nq":  # NQ rows have no id upstream
                record["id"] = f"{name}-{'train' if train else 'dev'}-{index}"
            if name == "popqa":
                record["s_pop"] = 10 + 37 * index
            records.append(record)
    return records


def shakespeare_passages(path: Path, rng: random.Random, n: int) -> list[str]:
    text = path.read_text(encoding="utf-8")
    starts = sorted(rng.sample(range(0, len(text) - 3000), n))
    return [text[s:s + 2500].split("\n", 1)[1].strip() for s in starts]


def longqa(passages, rng: random.Random, dataset: str) -> list[dict]:
    records = []
    for index, story in enumerate(passages):
        question, answer = cloze(story.replace("\n", " "), rng)
        record = {"id": index, "context": story, "question": question, "answer": [answer]}
        if dataset.startswith("infbench_choice"):
            words = sorted({w for w in story.split() if WORD.match(w) and w != answer})
            options = rng.sample(words, 3) + [answer]
            rng.shuffle(options)
            letter = "ABCD"[options.index(answer)]
            record["options"] = "A. {}\nB. {}\nC. {}\nD. {}".format(*options)
            record["answer"] = [letter, f"{letter}. {answer}"]
        records.append(record)
    return records


def write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text_dir", default=str(REPO.parent / "shared" / "data" / "text"))
    parser.add_argument("--out", default=str(REPO / "jaxeval" / "assets" / "helmet_sample"))
    args = parser.parse_args()
    text_dir, out = Path(args.text_dir), Path(args.out)
    rng = random.Random(20250409)
    paragraphs = wikitext_paragraphs(text_dir / "wikitext2_valid.txt")
    write(out / "data/json_kv/test_k105_dep6.jsonl", json_kv(rng))
    for kind in ("niah_multikey_2", "niah_multikey_3", "niah_multivalue"):
        write(out / f"data/ruler/{kind}/validation_8192.jsonl", ruler(paragraphs, rng, kind))
    for name, dep in (("nq", 6), ("triviaqa", 6), ("hotpotqa", 3)):
        write(out / f"data/kilt/{name}-dev-multikilt_1000_k50_dep{dep}.jsonl", kilt(paragraphs, rng, name, False, 2))
        write(out / f"data/kilt/{name}-train-multikilt_1000_k3_dep{dep}.jsonl", kilt(paragraphs, rng, name, True, 1))
    write(out / "data/kilt/popqa_test_1000_k50_dep6.jsonl", kilt(paragraphs, rng, "popqa", False, 2))
    write(out / "data/kilt/popqa_test_1000_k3_dep6.jsonl", kilt(paragraphs, rng, "popqa", True, 1))
    passages = shakespeare_passages(text_dir / "tinyshakespeare.txt", rng, 3 * RECORDS)
    for i, dataset in enumerate(("narrativeqa_7892", "infbench_qa_eng_7982", "infbench_choice_eng_7982")):
        write(out / f"prepared/{dataset}.jsonl", longqa(passages[i * RECORDS:(i + 1) * RECORDS], rng, dataset))
    (out / "SOURCE.md").write_text(SOURCE, encoding="utf-8")
    print(f"wrote {out}")


SOURCE = """# Embedded HELMET sample

Generated by `scripts/build_helmet_sample.py` (deterministic). Synthetic items in HELMET's
released file layout and record schema, for offline runs of `jaxeval run --tasks helmet`; NOT
HELMET's data (that is princeton-nlp/HELMET on the Hugging Face hub).

| files | built from | licence |
|---|---|---|
| data/json_kv, data/ruler (keys, values) | random UUIDs / numbers (fixed seed) | part of jaxeval (Apache-2.0) |
| data/ruler haystacks, data/kilt passages and cloze questions | WikiText-2 validation split (Merity et al. 2016; Wikipedia contributors), (wikitext2_valid.txt in the builder's --text_dir) | CC BY-SA 3.0 |
| prepared/* stories and cloze questions | Tiny Shakespeare (karpathy/char-rnn) (tinyshakespeare.txt in the builder's --text_dir) | public domain |
"""


if __name__ == "__main__":
    main()
