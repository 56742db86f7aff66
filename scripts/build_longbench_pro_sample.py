"""Build the embedded LongBench Pro sample: a few records per primary task, in the official schema.

    python scripts/build_longbench_pro_sample.py [--text_dir ../shared/data/text]
                                                 [--out jaxeval/assets/longbench_pro_sample]

Writes `<out>/longbench_pro_sample.json` (one JSON array, like the dataset's longbench_pro.json)
and `<out>/SOURCE.md`. Per primary task: two English records (different secondary tasks) built
from WikiText-2 validation text, Tiny Shakespeare and planted facts, and one hand-written
Chinese record (scripts/longbench_pro_sample_texts.py). Questions follow the dataset's observed
instruction layout in both modes. Every gold
answer can be read off its context. Deterministic: fixed seeds, the same file on every run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from build_longbench_sample import article_text, first_sentence, shakespeare_turns, wikitext_articles  # noqa: E402
from longbench_pro_sample_texts import CHINESE_ITEMS, SOURCE_MD, question  # noqa: E402

from jaxeval.benchmarks.longbench_pro.tasks import DIMENSIONS, SECONDARY_TASKS  # noqa: E402

NAMES = ("Arvelle", "Corwin Hale", "Mara Quint", "Tobias Renn", "Ilse Varga", "Odile Marsh")
PLACES = ("Tessaly", "Norwick", "Bramholt", "Ostrow", "Kelvara")


class English:
    """Builders of the English records; each returns (secondary task, context, task text,
    elements, supplement, example, answer)."""

    def __init__(self, articles, turns, seed: int = 7):
        self.rng = random.Random(seed)
        self.articles, self.turns = articles, turns

    def paragraphs(self, count: int, chars: int = 420) -> list[str]:
        return [article_text(paragraphs[:2], chars) for _, paragraphs in self.rng.sample(self.articles, count)]

    def sentences(self, count: int) -> list[str]:
        title, paragraphs = self.rng.choice(self.articles)
        found = [s.strip() + " ." for p in paragraphs for s in p.split(" . ") if 40 < len(s) < 260]
        return found[:count]

    def plant(self, text: str, sentences: list[str]) -> str:
        parts = text.split(" . ")
        for sentence in sentences:
            parts.insert(self.rng.randrange(1, len(parts)), sentence.rstrip(" ."))
        return " . ".join(parts)

    def t1(self, partial: bool):
        docs = self.paragraphs(5)
        counts = [0, 0, 0, 2, 1] if partial else [0, 4, 3, 2, 1]
        self.rng.shuffle(counts)
        docs = [self.plant(doc, ["The surveyor Arvelle recorded this passage ."] * n) for doc, n in zip(docs, counts)]
        context = "\n\n".join(f"[Doc{i + 1}]\n{doc}" for i, doc in enumerate(docs))
        ranked = sorted((i for i in range(5) if counts[i]), key=lambda i: -counts[i])
        return ("T1.2 Key-Snippet Retrieval" if partial else "T1.1 Global Cohesive Retrieval", context,
                "Rank the documents that mention the surveyor Arvelle by how often they mention him, most first.",
                "the document identifiers", "", "Doc2\nDoc5", [f"Doc{i + 1}" for i in ranked])

    def t2(self, partial: bool):
        if partial:
            years = sorted(self.rng.sample(range(1850, 1990), 4))
            events = [f"the mill at {place} was rebuilt" for place in PLACES[:4]]
            order = list(range(4))
            self.rng.shuffle(order)
            context = self.plant(article_text(self.rng.choice(self.articles)[1], 1800),
                                 [f"In {years[i]} , {events[i]} ." for i in range(4)])
            listing = "\n".join(f"E{k + 1}: {events[i]}" for k, i in enumerate(order))
            answer = [f"E{order.index(i) + 1}" for i in range(4)]
            return ("T2.2 Local Causal Chain Sorting", context, "Sort the following events in chronological order.",
                    "the event identifiers", listing, "E3\nE1", answer)
        title, paragraphs = self.rng.choice([a for a in self.articles if len(a[1]) >= 5])
        pieces = [article_text([p], 360) for p in paragraphs[:5]]
        order = list(range(5))
        self.rng.shuffle(order)
        context = "\n\n".join(f"[P{k + 1}] {pieces[i]}" for k, i in enumerate(order))
        return ("T2.1 Global Timeline Reconstruction", context,
                f"The paragraphs of an article about {title} were shuffled. Restore their original order.",
                "the paragraph identifiers", "", "P2\nP4", [f"P{order.index(i) + 1}" for i in range(5)])

    def t3(self, partial: bool):
        number, place = self.rng.randrange(1000, 9999), self.rng.choice(PLACES)
        options = [number, number + 17, number - 230, number + 905]
        self.rng.shuffle(options)
        letters = "ABCD"
        choices = "\n".join(f"{letters[i]}. {value}" for i, value in enumerate(options))
        if partial:
            context = self.plant(article_text(self.rng.choice(self.articles)[1], 2000),
                                 [f"The registry number of the lighthouse at {place} is {number} ."])
            text = f"What is the registry number of the lighthouse at {place}?"
        else:
            docs = self.paragraphs(3, 700)
            docs[0] = self.plant(docs[0], [f"The lighthouse at {place} was built by Mara Quint ."])
            docs[2] = self.plant(docs[2], [f"Every building by Mara Quint carries the registry number {number} ."])
            context = "\n\n".join(f"Document {i + 1}:\n{doc}" for i, doc in enumerate(docs))
            text = f"What registry number does the lighthouse at {place} carry?"
        return ("T3.2 Single-Hop Fact QA" if partial else "T3.1 Multi-Doc Integration QA", context, text,
                "the answer option letter (A/B/C/D)", choices, "C", [letters[options.index(number)]])

    def t4(self, partial: bool):
        title, paragraphs = self.rng.choice([a for a in self.articles if len(a[1]) >= 4])
        context = article_text(paragraphs, 2200)
        firsts = [first_sentence(p) for p in paragraphs[:4]]
        answer = [" ".join(firsts[:2]), " ".join(firsts[:3]), " ".join(firsts[1:4])]
        text = (f"Summarize what the text says about {title} in the first paragraphs." if partial
                else f"Write a summary of the whole text about {title}.")
        return ("T4.2 Query-Focused Summary" if partial else "T4.1 Global-Coverage Constrained Summary", context,
                text, "the summary", "", "<summary>", answer)

    def t5(self, partial: bool):
        sentences = self.sentences(8)
        context = "\n".join(f"[S{i + 1}] {s}" for i, s in enumerate(sentences))
        picked = sorted(self.rng.sample(range(len(sentences)), 1 if partial else 2))
        statement = (" ".join(sentences[picked[0]].split()[:8]) if partial
                     else " ".join(sentences[i] for i in picked))
        return ("T5.2 Key-Statement Citation Alignment" if partial else "T5.1 Full-Sentence Citation Alignment",
                context, "Find the sentences that the following statement is taken from.", "the sentence identifiers",
                f"Statement: {statement}", "S4", [f"S{i + 1}" for i in picked])

    def t6(self, partial: bool):
        if partial:
            chosen = self.rng.sample(self.articles, 3)
            docs = [(title, article_text([p], 300)) for title, ps in chosen for p in ps[:2]]
            self.rng.shuffle(docs)
            context = "\n\n".join(f"[D{i + 1}] {text}" for i, (_, text) in enumerate(docs))
            target = chosen[0][0]
            return ("T6.2 Targeted Subset Cluster Identification", context,
                    f"Identify every document taken from the article about {target}.", "the document identifiers",
                    "", "D1\nD6", [f"D{i + 1}" for i, (title, _) in enumerate(docs) if title == target])
        words = ["amber", "cobalt", "ivory", "saffron"]
        counts = [5, 3, 2, 1]
        text = article_text(self.rng.choice(self.articles)[1], 2000)
        planted = [f"A crate marked {w} stood by the door ." for w, n in zip(words, counts) for _ in range(n)]
        self.rng.shuffle(planted)
        return ("T6.3 Global Frequency Analysis", self.plant(text, planted),
                "Sort the crate markings amber, cobalt, ivory and saffron by how many crates carry them, most first.",
                "the markings", "", "ivory\namber", words)

    def t7(self, partial: bool):
        if partial:
            weights = [self.rng.randrange(20, 49) for _ in range(6)]
            for i in self.rng.sample(range(6), 2):
                weights[i] = self.rng.randrange(51, 90)
            lines = [f"Shipment K{i + 1} weighs {w} kg ." for i, w in enumerate(weights)]
            context = self.plant(article_text(self.rng.choice(self.articles)[1], 1600), lines)
            return ("T7.2 Targeted Rule or Condition Violation Detection", context,
                    "Rule: every shipment must weigh less than 50 kg. Find the shipments that break the rule.",
                    "the shipment identifiers", "", "K3", [f"K{i + 1}" for i, w in enumerate(weights) if w >= 50])
        sentences = self.sentences(8)
        place = self.rng.choice(PLACES)
        a, b = sorted(self.rng.sample(range(len(sentences) + 2), 2))
        sentences.insert(a, f"The bridge at {place} opened in 1921 .")
        sentences.insert(b, f"The bridge at {place} opened to traffic in 1934 .")
        context = "\n".join(f"[S{i + 1}] {s}" for i, s in enumerate(sentences))
        return ("T7.1 Global Conflict & Inconsistency Localization", context,
                "Find the sentences that contradict each other.", "the sentence identifiers", "", "S2\nS7",
                [f"S{a + 1}", f"S{b + 1}"])

    def t8(self, partial: bool):
        text = article_text(self.rng.choice(self.articles)[1], 1800)
        if partial:
            crates = [self.rng.randrange(3, 40) for _ in range(5)]
            planted = [f"On day {i + 1} the depot at Norwick received {n} crates ." for i, n in enumerate(crates)]
            return ("T8.2 Single-Source Targeted Aggregation", self.plant(text, planted),
                    "How many crates did the depot at Norwick receive in total?", "the number", "", "12",
                    [str(sum(crates))])
        value, steps = 10, []
        for k in range(5):
            delta = self.rng.randrange(2, 9)
            verb = "adds" if k % 2 == 0 else "removes"
            value += delta if verb == "adds" else -delta
            steps.append(f"At step {k + 1} the keeper {verb} {delta} stones to the pile .")
        return ("T8.3 Long-Context Procedural State Tracking",
                self.plant(text, ["The keeper's pile starts with 10 stones ."] + steps),
                "How many stones are in the keeper's pile after the last step?", "the number", "", "7", [str(value)])

    def t9(self, partial: bool):
        names = ["load_rows", "parse_header", "merge_tables", "render_page", "save_report"]
        changed = self.rng.sample(names[:3], 2)
        filler = self.sentences(5)

        def module(version: int) -> str:
            out = [f"# version {version}"]
            for i, name in enumerate(names):
                params = "path, strict" if version == 2 and name in changed else "path"
                body = f"    return {names[i - 1]}(path)" if i >= 3 else "    return path"
                out.append(f'def {name}({params}):\n    """{filler[i]}"""\n{body}\n')
            return "\n".join(out)

        context = f"[v1]\n{module(1)}\n[v2]\n{module(2)}"
        answer = (changed if partial else
                  [names[i] for i in range(3, 5) if names[i - 1] in changed])
        text = ("Which functions changed their parameter lists from v1 to v2?" if partial else
                "Which functions of v2 call a function whose parameter list changed from v1?")
        return ("T9.2 Localized Interface Change Detection" if partial else
                "T9.1 Dependency-Aware Multi-Version Impact Analysis", context, text, "the function names", "",
                "render_page", answer or ["none"])

    def t10(self, partial: bool):
        words = [w for w in " ".join(self.sentences(6)).split() if w.isalpha() and len(w) > 3][:14]
        if partial:
            lines = [f"{w} -> {len(w)}" for w in words[:8]]
            queries = words[8:9]
            answer = [str(len(w)) for w in queries]
        else:
            lines = [f"{w} -> {w[::-1].upper()}" for w in words[:10]]
            queries = words[10:12]
            answer = [w[::-1].upper() for w in queries]
        context = "Examples:\n" + "\n".join(lines)
        return ("T10.2 Targeted Example-Based Rule Induction" if partial else
                "T10.1 Large-Scale In-Context Rule Induction", context,
                "Infer the rule from the examples and apply it to each query.", "the outputs",
                "Queries:\n" + "\n".join(queries), "XYZ", answer)

    def t11(self, partial: bool):
        start = self.rng.randrange(len(self.turns) - 40)
        turns = [f"{speaker}: {speech[:200]}" for speaker, speech in self.turns[start:start + 14]]
        item = self.rng.choice(["lantern", "ledger", "rope", "kettle"])
        promise = f"ALICE: I promise to bring the {item} to the harbour on Friday."
        turns.insert(1 if not partial else len(turns) - 2, promise)
        options = ["lantern", "ledger", "rope", "kettle"]
        choices = "\n".join(f"{'ABCD'[i]}. the {o}" for i, o in enumerate(options))
        return ("T11.2 Short-Range Reference Resolution & State Query" if partial else
                "T11.1 Long-Range Entity & Commitment Tracking", "\n".join(turns),
                "What did Alice promise to bring to the harbour?", "the answer option letter (A/B/C/D)", choices,
                "B", ["ABCD"[options.index(item)]])


def build_records(text_dir: Path) -> list[dict]:
    articles = wikitext_articles(text_dir / "wikitext2_valid.txt")
    turns = shakespeare_turns(text_dir / "tinyshakespeare.txt")
    english = English(articles, turns)
    items = []
    for code in range(1, 12):
        builder = getattr(english, f"t{code}")
        for partial in (False, True):
            task, context, text, elements, supplement, example, answer = builder(partial)
            items.append(("English", task, context, text, elements, supplement, example, answer))
    items.extend(("Chinese", *item) for item in CHINESE_ITEMS)
    records = []
    lengths, difficulties = DIMENSIONS["token_length"], DIMENSIONS["difficulty"]
    for index, (language, task, context, text, elements, supplement, example, answer) in enumerate(items):
        secondary = SECONDARY_TASKS[task]
        record = {
            "id": "", "context": context, "language": language,
            "token_length": lengths[index % len(lengths)],  # nominal labels: every sample context is short
            "primary_task": secondary.primary, "secondary_task": task,
            "contextual_requirement": secondary.contextual_requirement,
            "question_nonthinking": question(language, text, elements, supplement, example, False,
                                             secondary.metric in ("Accuracy", "Summary")),
            "question_thinking": question(language, text, elements, supplement, example, True,
                                          secondary.metric in ("Accuracy", "Summary")),
            "answer": answer, "difficulty": difficulties[index % len(difficulties)],
        }
        record["id"] = hashlib.sha256(json.dumps(record, ensure_ascii=False, sort_keys=True).encode()).hexdigest()
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text_dir", default=str(HERE.parents[1] / "shared" / "data" / "text"))
    parser.add_argument("--out", default=str(HERE.parent / "jaxeval" / "assets" / "longbench_pro_sample"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    records = build_records(Path(args.text_dir))
    (out / "longbench_pro_sample.json").write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n",
                                                   encoding="utf-8")
    (out / "SOURCE.md").write_text(SOURCE_MD, encoding="utf-8")
    print(f"wrote {len(records)} records to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
