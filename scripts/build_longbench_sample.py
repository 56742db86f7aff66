"""Build the embedded LongBench sample: a few records for each of the 34 configs.

    python scripts/build_longbench_sample.py [--text_dir ../shared/data/text]
                                             [--out jaxeval/assets/longbench_sample]

Writes `<out>/<config>.jsonl` (the official file names: `qasper.jsonl`, `qasper_e.jsonl`, ...)
in the official record schema (input, context, answers, length, dataset, language,
all_classes, _id), and `<out>/SOURCE.md`. English records are built from WikiText-2 (v1 from
its validation split, LongBench-E from its test split) and Tiny Shakespeare, in their
tokenized / original form as is; Chinese, trec and code records from the hand-written
material in scripts/longbench_sample_texts.py. Contexts are a few thousand characters, so a
tiny model runs the whole sample on CPU. Every answer can be read off its context.

`length` is computed as the README defines it (words of input, context and answers for
English and code, characters for Chinese): so every LongBench-E sample record falls in the
0-4k bucket, and the sample's 4-8k and 8k+ buckets score NaN, as the official scorer gives
for empty buckets. Deterministic: fixed seeds, the same files on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import longbench_sample_texts as texts  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from jaxeval.benchmarks.longbench.tasks import ALL_CLASSES, DATASETS, E_DATASETS, TASKS  # noqa: E402

RECORDS_PER_CONFIG = 3
CONTEXT_CHARS = 2600  # target context size of the English records
ARTICLE_HEADING = re.compile(r"^ = ([^=].*) = $")  # " = Title = ", not " = = Sub = = "
YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)\b")
SPEAKER = re.compile(r"^([A-Z][A-Za-z' ]{0,30}):$")


def wikitext_articles(path: Path) -> list[tuple[str, list[str]]]:
    """(title, paragraphs) per article; sub-headings and blank lines dropped."""
    articles: list[tuple[str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = ARTICLE_HEADING.match(line)
        if heading:
            articles.append((heading.group(1).strip(), []))
        elif articles and line.strip() and not line.strip().startswith("="):
            articles[-1][1].append(clean(line))
    # titles are answers, so articles whose title lost a word to <unk> are left out
    return [(title, paragraphs) for title, paragraphs in articles
            if sum(map(len, paragraphs)) > 3000 and "<unk>" not in title]


def clean(line: str) -> str:
    """WikiText's <unk> (a word outside its vocabulary) dropped: real tokenizers read it as a special token."""
    return " ".join(word for word in line.split() if word != "<unk>").replace("<unk>", "")


def shakespeare_turns(path: Path) -> list[tuple[str, str]]:
    """(speaker, speech) turns of Tiny Shakespeare: each blank-line block is "Name:" then lines."""
    turns = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        lines = block.strip().split("\n")
        match = SPEAKER.match(lines[0])
        if match and len(lines) > 1:
            turns.append((match.group(1), " ".join(line.strip() for line in lines[1:])))
    return turns


def first_sentence(paragraph: str) -> str:
    return paragraph.split(" . ")[0].strip() + " ."  # WikiText writes a full stop as " . "


def clip(text: str, chars: int) -> str:
    """The text up to its last sentence end before `chars`, else cut at a word."""
    if len(text) <= chars:
        return text
    cut = text.rfind(" . ", 0, chars)
    return text[:cut + 2] if cut > chars // 3 else text[:text.rfind(" ", 0, chars)]


def article_text(paragraphs: list[str], chars: int = CONTEXT_CHARS) -> str:
    return clip("\n".join(paragraphs), chars)


class Builder:
    """Makes the records of one config from its own slice of the English sources."""

    def __init__(self, articles, turns, seed: int):
        self.rng = random.Random(seed)
        self.articles, self.turns = articles, turns

    def pick_articles(self, count: int):
        return self.rng.sample(self.articles, count)

    def scene(self, chars: int) -> list[tuple[str, str]]:
        start = self.rng.randrange(len(self.turns) - 200)
        picked, size = [], 0
        for speaker, speech in self.turns[start:]:
            if size + len(speech) > chars and picked:
                break
            picked.append((speaker, speech))
            size += len(speaker) + len(speech) + 3
        return picked

    # --- single document QA
    def article_question(self, index: int) -> tuple[str, str, list[str]]:
        title, paragraphs = self.pick_articles(1)[0]
        context = title + "\n\n" + article_text(paragraphs)
        year = YEAR.search(context)
        if index % 3 == 1 and year:
            return context, "Which year is mentioned first in the article ?", [year.group(1)]
        if index % 3 == 2:
            return context, f"Is the article about {title} ?", ["yes"]
        return context, "What is the title of the article ?", [title]

    def story_question(self) -> tuple[str, str, list[str]]:
        scene = self.scene(CONTEXT_CHARS)
        context = "\n\n".join(f"{speaker}:\n{speech}" for speaker, speech in scene)
        return context, "Who speaks first in this passage ?", [scene[0][0]]

    # --- multi-document QA
    def passages_question(self) -> tuple[str, str, list[str]]:
        unique: list[str] = []
        while not unique:  # a word found in the target passage only
            chosen = self.pick_articles(4)
            bodies = [clip(" ".join(paragraphs), CONTEXT_CHARS // 4) for _, paragraphs in chosen]
            words = [set(w for w in body.split() if w.isalpha() and len(w) >= 8) for body in bodies]
            target = self.rng.randrange(4)
            unique = sorted(words[target] - set().union(*(w for i, w in enumerate(words) if i != target)))
        word = self.rng.choice(unique)
        context = "\n".join(f"Passage {i + 1}:\n{title}\n{body}" for i, ((title, _), body)
                            in enumerate(zip(chosen, bodies)))
        return context, f"What is the title of the passage that contains the word \" {word} \" ?", [chosen[target][0]]

    # --- summarisation
    def summary(self, passages: int) -> tuple[str, str, list[str]]:
        chosen = self.pick_articles(passages)
        if passages == 1:
            title, paragraphs = chosen[0]
            return article_text(paragraphs), "", [" ".join(first_sentence(p) for p in paragraphs[:2])]
        bodies = [clip(" ".join(paragraphs), CONTEXT_CHARS // passages) for _, paragraphs in chosen]
        context = "\n".join(f"Passage {i + 1}:\n{body}" for i, body in enumerate(bodies))
        return context, "", [" ".join(first_sentence(body) for body in bodies)]

    def meeting_query(self) -> tuple[str, str, list[str]]:
        scene = self.scene(CONTEXT_CHARS)
        context = "\n".join(f"{speaker}: {speech}" for speaker, speech in scene)
        speaker, speech = scene[self.rng.randrange(min(3, len(scene)))]
        first = next(s for who, s in scene if who == speaker)
        return context, f"What does {speaker} say first in the meeting ?", [" ".join(first.split()[:40])]

    # --- few-shot
    def trec(self) -> tuple[str, str, list[str]]:
        questions = self.rng.sample(texts.TREC_QUESTIONS, 11)
        shots = "\n".join(f"Question: {q}\nType: {t}" for q, t in questions[:10])
        question, label = questions[10]
        return shots, f"Question: {question}\nType:", [label]

    def triviaqa(self) -> tuple[str, str, list[str]]:
        blocks, answer = [], None
        for title, paragraphs in self.pick_articles(8):
            passage = clip(" ".join(paragraphs), 550)
            year = YEAR.search(passage)
            if year:
                blocks.append((passage, year.group(1)))
            if len(blocks) == 4:
                break
        question = "Which year is mentioned first in the passage ?"
        shots = "\n\n".join(f"Passage: {p}\nQuestion: {question}\nAnswer: {a}" for p, a in blocks[:-1])
        passage, answer = blocks[-1]
        return shots, f"Passage: {passage}\nQuestion: {question}\nAnswer:", [answer]

    def samsum(self) -> tuple[str, str, list[str]]:
        dialogues = []
        for _ in range(4):
            scene = self.scene(500)[:5]
            speakers = list(dict.fromkeys(speaker for speaker, _ in scene))
            talk = "\n".join(f"{speaker}: {clip(speech, 160)}" for speaker, speech in scene)
            summary = (f"{speakers[0]} and {speakers[1]} talk. {speakers[0]} speaks first."
                       if len(speakers) > 1 else f"{speakers[0]} speaks alone.")
            dialogues.append((talk, summary))
        shots = "\n\n".join(f"Dialogue: {talk}\nSummary: {summary}" for talk, summary in dialogues[:-1])
        talk, summary = dialogues[-1]
        return shots, f"Dialogue: {talk}\nSummary: ", [summary]

    # --- synthetic
    def passage_count(self) -> tuple[str, str, list[str]]:
        unique = [clip(" ".join(p), 300) for _, p in self.pick_articles(self.rng.randint(3, 6))]
        paragraphs = unique + [self.rng.choice(unique) for _ in range(self.rng.randint(1, 3))]
        self.rng.shuffle(paragraphs)
        context = "\n\n".join(f"Paragraph {i + 1}: {p}" for i, p in enumerate(paragraphs))
        return context, "", [str(len(unique))]

    def passage_retrieval(self) -> tuple[str, str, list[str]]:
        chosen = self.pick_articles(6)
        bodies = [clip(" ".join(p), 420) for _, p in chosen]
        target = self.rng.randrange(len(bodies))
        context = "\n\n".join(f"Paragraph {i + 1}: {body}" for i, body in enumerate(bodies))
        return context, first_sentence(bodies[target]), [f"Paragraph {target + 1}"]


# --- Chinese (hand-written) and code records: index picks the variation

def zh_single(index: int) -> tuple[str, str, list[str]]:
    paragraphs = texts.ZH_PARAGRAPHS
    picked = [paragraphs[(index * 3 + k) % len(paragraphs)] for k in range(4)]
    text, question, answer = picked[index % 4]
    return "\n\n".join(p[0] for p in picked), question, [answer]


def zh_dureader(index: int) -> tuple[str, str, list[str]]:
    paragraphs = texts.ZH_PARAGRAPHS
    picked = [paragraphs[(index * 4 + k) % len(paragraphs)] for k in range(3)]
    context = "\n\n".join(f"文章{i + 1}\n标题：{p[1].rstrip('？')}\n{p[0]}" for i, p in enumerate(picked))
    text, question, answer = picked[index % 3]
    sentence = next(s for s in text.split("。") if answer in s) + "。"
    return context, question, [sentence, answer]


def zh_vcsum(index: int) -> tuple[str, str, list[str]]:
    turns = texts.ZH_MEETING[: len(texts.ZH_MEETING) - index]  # shorter meetings, same decisions
    context = "\n".join(f"{speaker}：{line}" for speaker, line in turns)
    return context, "", [texts.ZH_MEETING_SUMMARY]


def zh_lsht(index: int) -> tuple[str, str, list[str]]:
    news = texts.ZH_NEWS[index:] + texts.ZH_NEWS[:index]
    shots = "\n".join(f"新闻内容：{text}\n类别：{label}" for text, label in news[:-1])
    text, label = news[-1]
    return shots, f"新闻内容：{text}\n类别：", [label]


def zh_retrieval(index: int) -> tuple[str, str, list[str]]:
    paragraphs = [p[0] for p in texts.ZH_PARAGRAPHS]
    order = paragraphs[index * 3:] + paragraphs[:index * 3]
    target = (index * 2 + 1) % len(order)
    context = "\n\n".join(f"段落{i + 1}：{p}" for i, p in enumerate(order))
    return context, order[target].split("。")[0] + "。", [f"段落{target + 1}"]


CODE_FILES = (("python", texts.PY_INVENTORY), ("java", texts.JAVA_QUEUE), ("csharp", texts.CSHARP_COUNTER))


def code_cut(code: str, fraction: float) -> tuple[str, str]:
    """(code before a line, that line): the first non-empty, comment-free line past fraction."""
    lines = code.split("\n")
    for number in range(int(len(lines) * fraction), len(lines)):
        line = lines[number]
        if line.strip() and not any(mark in line for mark in ("#", "//", "`")) and line.strip() not in "{}":
            return "\n".join(lines[:number]) + "\n", line
    raise ValueError("no line to cut at")


def lcc(index: int, e: bool) -> tuple[str, str, list[str], str]:
    language, code = CODE_FILES[index % len(CODE_FILES)]
    context, line = code_cut(code, (0.55 if e else 0.4) + 0.1 * index)
    return context, "", [line], language


def repobench(index: int, e: bool) -> tuple[str, str, list[str], str]:
    if index % 2 == 0:
        files, module, language, mark = texts.PY_REPO_FILES, texts.PY_REPO_MODULE, "python", "#"
    else:
        files, module, language, mark = texts.JAVA_REPO_FILES, texts.JAVA_REPO_MODULE, "java", "//"
    context = "".join(f"{mark} Path: {path}\n{code}\n" for path, code in files)
    prefix, line = code_cut(module, (0.5 if e else 0.35) + 0.1 * index)
    path = "shop/checkout.py" if language == "python" else "shop/cart/Cart.java"
    return context, f"{mark} Path: {path}\n{prefix}", [line], language


def record_length(language: str, input_: str, context: str, answers: list[str]) -> int:
    """The README's definition: characters for Chinese, whitespace-split words otherwise."""
    if language == "zh":
        return len(input_) + len(context) + sum(len(a) for a in answers)
    return len(input_.split()) + len(context.split()) + sum(len(a.split()) for a in answers)


def make_record(config: str, index: int, builder: Builder, e: bool) -> dict:
    dataset = config.removesuffix("_e")
    language = "zh" if TASKS[dataset].language == "zh" else "en"
    build = {
        "narrativeqa": builder.story_question, "qasper": lambda: builder.article_question(index),
        "multifieldqa_en": lambda: builder.article_question(index + 1),
        "hotpotqa": builder.passages_question, "2wikimqa": builder.passages_question,
        "musique": builder.passages_question, "gov_report": lambda: builder.summary(1),
        "qmsum": builder.meeting_query, "multi_news": lambda: builder.summary(3),
        "trec": builder.trec, "triviaqa": builder.triviaqa, "samsum": builder.samsum,
        "passage_count": builder.passage_count, "passage_retrieval_en": builder.passage_retrieval,
        "multifieldqa_zh": lambda: zh_single(index), "dureader": lambda: zh_dureader(index),
        "vcsum": lambda: zh_vcsum(index), "lsht": lambda: zh_lsht(index),
        "passage_retrieval_zh": lambda: zh_retrieval(index),
    }
    if dataset in ("lcc", "repobench-p"):
        context, input_, answers, language = (lcc if dataset == "lcc" else repobench)(index, e)
    else:
        context, input_, answers = build[dataset]()
    record_id = hashlib.sha256(f"{config}\n{index}\n{input_}\n{context}".encode()).hexdigest()[:48]
    return {
        "input": input_, "context": context, "answers": answers,
        "length": record_length(language, input_, context, answers),
        "dataset": dataset, "language": language,
        "all_classes": list(ALL_CLASSES[dataset]) if dataset in ALL_CLASSES else None,
        "_id": record_id,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text_dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "text"))
    parser.add_argument("--out", default=str(REPO / "jaxeval" / "assets" / "longbench_sample"))
    args = parser.parse_args(argv)
    text_dir, out = Path(args.text_dir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    turns = shakespeare_turns(text_dir / "tinyshakespeare.txt")
    sources = {False: wikitext_articles(text_dir / "wikitext2_valid.txt"),
               True: wikitext_articles(text_dir / "wikitext2_test.txt")}
    configs = [(name, False) for name in DATASETS] + [(name + "_e", True) for name in E_DATASETS]
    for config, e in configs:
        seed = int(hashlib.sha256(config.encode()).hexdigest()[:8], 16)  # one stream per config
        builder = Builder(sources[e], turns, seed=seed)
        with open(out / f"{config}.jsonl", "w", encoding="utf-8") as lines:
            for index in range(RECORDS_PER_CONFIG):
                lines.write(json.dumps(make_record(config, index, builder, e), ensure_ascii=False) + "\n")
    size = sum(path.stat().st_size for path in out.glob("*.jsonl"))
    print(f"wrote {len(configs)} files, {len(configs) * RECORDS_PER_CONFIG} records, {size:,} bytes to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
