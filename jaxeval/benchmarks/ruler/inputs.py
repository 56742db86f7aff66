"""RULER's input files, read and checked: the essay haystack, the SQuAD and HotpotQA files of the
QA tasks, cwe's english_words.json, the pinned wonderwords 2.2.0 lists, and nltk's sentence
splitter. Each user file is named by a flag; a bad one is a one-line DataError naming it."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import re
from pathlib import Path

from jaxeval.benchmarks.ruler.tasks import ASSETS
from jaxeval.errors import ConfigError, DataError

DEFAULT_FILES = {
    "essay": ASSETS / "haystack_pride_and_prejudice.json",
    "squad": ASSETS / "squad.json",
    "hotpotqa": ASSETS / "hotpotqa.json",
    "english_words": ASSETS / "english_words_standin.txt",
}
ABOUT_DEFAULT = {
    "essay": "shipped stand-in: Pride and Prejudice (public domain), not RULER's PaulGrahamEssays.json",
    "squad": "shipped stand-in: synthetic SQuAD-layout file, not SQuAD v2.0 dev",
    "hotpotqa": "shipped stand-in: synthetic HotpotQA-layout file, not HotpotQA dev distractor",
    "english_words": "shipped stand-in: SCOWL's large American list (a-z words) and the wonderwords lists, "
                     "not RULER's english_words.json",
}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _read_json(path: Path, flag: str):
    """The JSON in a user's file; any problem one DataError naming the flag and the file."""
    from jaxeval.io.inputs import read_text

    try:
        text = read_text(path)
    except DataError as e:
        raise DataError(f"{flag} {e}") from None
    if not text.strip():
        raise DataError(f"{flag} {path}: empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{flag} {path}: not JSON (line {e.lineno}: {e.msg})") from None


def source(kind: str, path: str | None) -> dict:
    """Which file a run reads for `kind` (essay, squad, hotpotqa): path, sha256, shipped or not."""
    chosen = Path(path) if path else DEFAULT_FILES[kind]
    if kind == "english_words":
        english_words(str(chosen))
    else:
        _read_json(chosen, f"--ruler_{kind}")  # checked before any generation
    return {"path": str(chosen), "sha256": sha256_file(chosen), "shipped": not path,
            "about": ABOUT_DEFAULT[kind] if not path else "user file"}


@functools.lru_cache(maxsize=4)
def essay_words(path: str) -> tuple[str, ...]:
    """niah.py's haystack: re.sub(r'\\s+', ' ', text).split(' '), '' items kept."""
    data = _read_json(Path(path), "--ruler_essay")
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise DataError(f"--ruler_essay {path}: expected an object with a \"text\" string (PaulGrahamEssays.json layout)")
    if not data["text"].strip():
        raise DataError(f"--ruler_essay {path}: the \"text\" is empty")
    return tuple(re.sub(r"\s+", " ", data["text"]).split(" "))


@functools.lru_cache(maxsize=8)
def essay_sentences(path: str, n: int) -> tuple[str, ...]:
    """niah.py's sentences of the first n haystack words (the list repeated past its end):
    sent_tokenize(" ".join(words[:n]).strip()). A pure function of n, so the samples of one
    size share it instead of splitting the same text again."""
    words = essay_words(path)
    chosen = words[:n] if n <= len(words) else (words * ((n + len(words) - 1) // len(words)))[:n]
    return tuple(sentence_splitter()(" ".join(chosen).strip()))


def _field(record, name, kind, where):
    value = record.get(name) if isinstance(record, dict) else None
    if not isinstance(value, kind):
        raise DataError(f"{where}: missing or malformed {name!r}")
    return value


@functools.lru_cache(maxsize=4)
def squad(path: str) -> tuple[list[dict], list[str]]:
    """qa.py read_squad: documents sorted and distinct, the answerable questions in file order,
    every annotator answer kept, the article's other paragraphs as more_context."""
    flag = f"--ruler_squad {path}"
    data = _read_json(Path(path), "--ruler_squad")
    articles = _field(data, "data", list, flag)
    paragraphs = [(a, p) for i, a in enumerate(articles)
                  for p in _field(a, "paragraphs", list, f"{flag} data[{i}]")]
    docs = sorted({_field(p, "context", str, f"{flag} paragraph") for _, p in paragraphs})
    index = {c: i for i, c in enumerate(docs)}
    questions = []
    for i, article in enumerate(articles):
        more = [index[p["context"]] for p in article["paragraphs"]]
        for p in article["paragraphs"]:
            for qa in _field(p, "qas", list, f"{flag} data[{i}] paragraph"):
                if not qa.get("is_impossible", False):
                    answers = _field(qa, "answers", list, f"{flag} question {qa.get('id', '?')}")
                    questions.append({"query": _field(qa, "question", str, f"{flag} question {qa.get('id', '?')}"),
                                      "outputs": [a["text"] for a in answers if isinstance(a, dict) and "text" in a],
                                      "context": [index[p["context"]]],
                                      "more_context": [j for j in more if j != index[p["context"]]]})
    if not questions:
        raise DataError(f"{flag}: no answerable question")
    return questions, docs


@functools.lru_cache(maxsize=4)
def hotpotqa(path: str) -> tuple[list[dict], list[str]]:
    """qa.py read_hotpotqa: each document f"{title}\\n{''.join(sentences)}", sorted and distinct."""
    flag = f"--ruler_hotpotqa {path}"
    data = _read_json(Path(path), "--ruler_hotpotqa")
    if not isinstance(data, list) or not data:
        raise DataError(f"{flag}: expected a non-empty list of HotpotQA items")

    def doc(pair, where):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and isinstance(pair[1], list)):
            raise DataError(f"{where}: a context entry is not [title, sentences]")
        return f"{pair[0]}\n{''.join(pair[1])}"

    for i, item in enumerate(data):
        _field(item, "question", str, f"{flag} item {i}")
        _field(item, "answer", str, f"{flag} item {i}")
        _field(item, "context", list, f"{flag} item {i}")
    docs = sorted({doc(pair, f"{flag} item {i}") for i, item in enumerate(data) for pair in item["context"]})
    index = {c: i for i, c in enumerate(docs)}
    questions = [{"query": item["question"], "outputs": [item["answer"]],
                  "context": [index[doc(pair, flag)] for pair in item["context"]]} for item in data]
    return questions, docs


@functools.lru_cache(maxsize=2)
def english_words(path: str) -> tuple[str, ...]:
    """cwe's randle words: list(json.load(english_words.json).values()); a .txt file (the shipped
    stand-in) is one word a line."""
    if path.endswith(".txt"):
        from jaxeval.io.inputs import read_text

        try:
            words = tuple(line.strip() for line in read_text(Path(path)).splitlines() if line.strip())
        except DataError as e:
            raise DataError(f"--ruler_english_words {e}") from None
        if not words:
            raise DataError(f"--ruler_english_words {path}: no words in the file")
        return words
    data = _read_json(Path(path), "--ruler_english_words")
    if not isinstance(data, dict) or not data:
        raise DataError(f"--ruler_english_words {path}: expected a non-empty JSON object (RULER's english_words.json)")
    return tuple(data.values())


@functools.lru_cache(maxsize=None)
def wonderwords(name: str) -> tuple[str, ...]:
    """wonderwords 2.2.0's _get_words_from_text_file: each line right-stripped."""
    with open(ASSETS / "wonderwords" / f"{name}.txt", encoding="utf-8") as f:
        return tuple(line.rstrip() for line in f.readlines())


class PairWords:
    """niah.py's `words = sorted(set(f"{adj}-{noun}" ...))` (6.2 million strings) indexed without
    building it: "A-n" and "B-m" compare as "A-" and "B-" unless one adjective starts with the
    other plus "-", so blocks of one adjective are whole runs of the sorted list except in those
    few clusters, which are built in full."""

    def __init__(self, adjectives, nouns):
        self.nouns = sorted(set(nouns))
        roots = {}
        for adj in sorted(set(adjectives), key=len):
            root = next((r for r in roots if adj == r or adj.startswith(r + "-")), adj)
            roots.setdefault(root, []).append(adj)
        self.blocks, starts, total = [], [], 0
        for root in sorted(roots, key=lambda r: r + "-"):
            members = roots[root]
            block = root + "-" if len(members) == 1 else sorted({f"{a}-{n}" for a in members for n in nouns})
            self.blocks.append(block)
            starts.append(total)
            total += len(self.nouns) if isinstance(block, str) else len(block)
        self.starts, self.size = starts, total

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int) -> str:
        b = bisect.bisect_right(self.starts, i) - 1
        block = self.blocks[b]
        return block + self.nouns[i - self.starts[b]] if isinstance(block, str) else block[i - self.starts[b]]


@functools.lru_cache(maxsize=1)
def niah_words() -> PairWords:
    return PairWords(wonderwords("adjectivelist"), wonderwords("nounlist"))


@functools.lru_cache(maxsize=1)
def cwe_words() -> tuple[str, ...]:
    """common_words_extraction.py: sorted(set(nouns + adjs + verbs)), before its seeded shuffle."""
    return tuple(sorted(set(wonderwords("nounlist") + wonderwords("adjectivelist") + wonderwords("verblist"))))


@functools.lru_cache(maxsize=1)
def sentence_splitter():
    """nltk's sent_tokenize (punkt_tab). Like RULER, asks nltk to download the tables when they
    are missing; a ConfigError in one line when that fails."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
    except LookupError:
        try:
            ok = nltk.download("punkt_tab", quiet=True, raise_on_error=True)
        except Exception:  # noqa: BLE001 - any download failure is the same user-facing condition
            ok = False
        if not ok:
            raise ConfigError("RULER's essay haystack needs nltk's punkt_tab sentence tables, which are not "
                              "installed and could not be downloaded; run `python -m nltk.downloader punkt_tab` "
                              "or point NLTK_DATA at a folder holding tokenizers/punkt_tab") from None
    from nltk.tokenize import sent_tokenize

    return sent_tokenize
