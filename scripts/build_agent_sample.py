"""Build the facts config of the embedded longctx-agent-bench sample.

    python scripts/build_agent_sample.py [--text_dir ../shared/data/text]
                                         [--out jaxeval/assets/agent_bench_sample]

Writes `<out>/facts/8k-00000-of-00001.parquet` and `<out>/facts/32k-00000-of-00001.parquet`
in the hub layout and schema of docs/provenance.md#agent-bench, and `<out>/facts/SOURCE.md`.

Each item is whole WikiText-2 articles (text kept as is, `<unk>` and spaced punctuation
included), with 8 planted fact sentences in its first part and their 8 queries in its last
part, in shuffled order, then cut to exactly 8,193 or 32,769 tokens of the embedded
tokenizer (jaxeval/assets/tiny_llama, which adds no BOS). Facts and queries are inserted at
sentence starts (after " . "), never inside one another. distance_tokens is the number of
tokens from the end of the fact sentence to the answer's first token (the space of
" 48213."). Deterministic: a fixed seed, the same files on every run.
"""

from __future__ import annotations

import argparse
import bisect
import dataclasses
import random
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from planted_facts import PlantedFact, make_facts  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SEED = 1609  # arXiv 1609.07843, WikiText
FACTS_PER_ITEM = 8
# split name -> (tokens per item, items, WikiText-2 file, its split name)
SPLITS = {
    "8k": (8193, 4, "wikitext2_valid.txt", "validation"),
    "32k": (32769, 2, "wikitext2_test.txt", "test"),
}
# Where facts and queries go, as fractions of the item's tokens: facts early, queries late,
# so every query is thousands of tokens after its fact. The queries stop short of the end
# because the insertions push the text back by a few hundred tokens before the cut.
FACT_WINDOW = (0.02, 0.30)
QUERY_WINDOW = (0.60, 0.95)
ARTICLE_HEADING = re.compile(r"^ = ([^=].*) = $", re.MULTILINE)  # " = Title = ", not " = = Sub = = "
SENTENCE_START = re.compile(r"(?<= \. )(?=[A-Z])")  # WikiText writes a full stop as " . "

TARGET_TYPE = pa.struct([
    ("answer_char", pa.list_(pa.int64())),
    ("answer", pa.string()),
    ("fact_char", pa.list_(pa.int64())),
    ("fact", pa.string()),
    ("distance_tokens", pa.int64()),
])
SOURCE_TYPE = pa.struct([
    ("dataset", pa.string()),
    ("config", pa.string()),
    ("split", pa.string()),
    ("articles", pa.list_(pa.string())),
])
FACTS_SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()),
                          ("targets", pa.list_(TARGET_TYPE)), ("source", SOURCE_TYPE)])


@dataclasses.dataclass(frozen=True)
class Article:
    title: str
    text: str  # heading line included, as in the file


def read_articles(path: Path) -> list[Article]:
    raw = path.read_text("utf-8")
    starts = [m.start() for m in ARTICLE_HEADING.finditer(raw)] + [len(raw)]
    return [Article(ARTICLE_HEADING.match(raw, a).group(1), raw[a:b]) for a, b in zip(starts, starts[1:])]


def token_count(tokenizer, text: str) -> int:
    return len(tokenizer(text)["input_ids"])


def cut_to_tokens(tokenizer, text: str, n_tokens: int) -> str:
    """The prefix of `text` that tokenizes to exactly n_tokens (re-checked: BPE may re-merge at the cut)."""
    offsets = tokenizer(text, return_offsets_mapping=True)["offset_mapping"]
    if len(offsets) < n_tokens:
        raise ValueError(f"text has {len(offsets)} tokens, fewer than {n_tokens}")
    cut = offsets[n_tokens - 1][1]
    for _ in range(64):
        count = token_count(tokenizer, text[:cut])
        if count == n_tokens:
            return text[:cut]
        cut += 1 if count < n_tokens else -1
    raise ValueError(f"no prefix of exactly {n_tokens} tokens near character {cut}")


def spread_points(rng: random.Random, candidates: list[int], lo: int, hi: int, count: int) -> list[int]:
    """`count` distinct candidates in [lo, hi), one per equal-width bin so they spread out."""
    picked: list[int] = []
    width = (hi - lo) / count
    for k in range(count):
        bin_lo, bin_hi = lo + k * width, lo + (k + 1) * width
        in_bin = [c for c in candidates if bin_lo <= c < bin_hi and c not in picked]
        if not in_bin:
            raise ValueError(f"no sentence start between characters {bin_lo:.0f} and {bin_hi:.0f}")
        picked.append(rng.choice(in_bin))
    return picked


def plant(base: str, fact_points: list[int], query_points: list[int], facts: list[PlantedFact],
          query_order: list[int]) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]]]:
    """Insert fact k at fact_points[k] and the query of fact query_order[j] at query_points[j].

    Returns the new text, and per fact its fact span and its answer span in that text.
    """
    inserts = [(p, "fact", k) for k, p in enumerate(fact_points)]
    inserts += [(p, "query", query_order[j]) for j, p in enumerate(query_points)]
    pieces, length, last = [], 0, 0
    fact_spans: dict[int, tuple[int, int]] = {}
    answer_spans: dict[int, tuple[int, int]] = {}
    for point, kind, k in sorted(inserts):
        pieces.append(base[last:point])
        length += point - last
        last = point
        if kind == "fact":
            fact_spans[k] = (length, length + len(facts[k].fact))
            sentence = facts[k].fact
        else:
            start = length + len(facts[k].query_prefix)
            answer_spans[k] = (start, start + len(facts[k].answer))
            sentence = facts[k].query
        pieces.append(sentence + " ")
        length += len(sentence) + 1
    pieces.append(base[last:])
    n = len(facts)
    return "".join(pieces), [fact_spans[k] for k in range(n)], [answer_spans[k] for k in range(n)]


def build_item(tokenizer, rng: random.Random, articles: list[Article],
               n_tokens: int) -> tuple[str, list[dict], list[str]]:
    base = "".join(a.text for a in articles)
    offsets = tokenizer(base, return_offsets_mapping=True)["offset_mapping"]
    token_starts = [a for a, _ in offsets]
    char_at_token = lambda fraction: token_starts[int(fraction * n_tokens)]  # noqa: E731
    sentence_starts = [m.start() for m in SENTENCE_START.finditer(base)]
    fact_points = sorted(spread_points(rng, sentence_starts, *map(char_at_token, FACT_WINDOW),
                                       FACTS_PER_ITEM))
    query_points = sorted(spread_points(rng, sentence_starts, *map(char_at_token, QUERY_WINDOW),
                                        FACTS_PER_ITEM))
    facts = make_facts(rng, FACTS_PER_ITEM)
    while any(f.number in base for f in facts):  # a number already in the text could be copied
        facts = make_facts(rng, FACTS_PER_ITEM)
    query_order = list(range(FACTS_PER_ITEM))
    rng.shuffle(query_order)

    text, fact_spans, answer_spans = plant(base, fact_points, query_points, facts, query_order)
    text = cut_to_tokens(tokenizer, text, n_tokens)
    starts = [a for a, _ in tokenizer(text, return_offsets_mapping=True)["offset_mapping"]]
    targets = []
    for fact, fact_span, answer_span in zip(facts, fact_spans, answer_spans):
        assert answer_span[1] < len(text), "a query fell past the cut"
        assert text[answer_span[0]:answer_span[1]] == fact.answer
        assert text[fact_span[0]:fact_span[1]] == fact.fact
        answer_token = starts.index(answer_span[0])  # raises if the answer is not at a token start
        fact_end_token = bisect.bisect_left(starts, fact_span[1])
        targets.append({"answer_char": list(answer_span), "answer": fact.answer,
                        "fact_char": list(fact_span), "fact": fact.fact,
                        "distance_tokens": answer_token - fact_end_token})
    # Sorted by where the query stands, as a reader meets them.
    targets.sort(key=lambda t: t["answer_char"][0])
    # An article is named when its start survives the cut (insertions shift it right).
    inserted = [(p, len(facts[k].fact) + 1) for k, p in enumerate(fact_points)]
    inserted += [(p, len(facts[query_order[j]].query) + 1) for j, p in enumerate(query_points)]
    kept_titles, article_start = [], 0
    for article in articles:
        shifted = article_start + sum(size for p, size in inserted if p <= article_start)
        if shifted < len(text):
            kept_titles.append(article.title)
        article_start += len(article.text)
    return text, targets, kept_titles


def build_split(tokenizer, rng: random.Random, articles: list[Article], n_tokens: int, n_items: int,
                split: str, wikitext_split: str) -> list[dict]:
    items, cursor = [], 0
    for index in range(n_items):
        chosen = []
        # Whole articles until comfortably past the size (the cut drops the excess).
        while sum(len(a.text) for a in chosen) < 4.0 * n_tokens * 1.15:
            if cursor == len(articles):
                raise ValueError(f"{split}: the WikiText file has too few articles for {n_items} items")
            chosen.append(articles[cursor])
            cursor += 1
        text, targets, titles = build_item(tokenizer, rng, chosen, n_tokens)
        items.append({"id": f"facts-{split}-{index:03d}", "text": text, "targets": targets,
                      "source": {"dataset": "Salesforce/wikitext", "config": "wikitext-2-v1",
                                 "split": wikitext_split, "articles": titles}})
    return items


def main() -> None:
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text_dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "text")
    parser.add_argument("--tokenizer", type=Path, default=REPO / "jaxeval/assets/tiny_llama")
    parser.add_argument("--out", type=Path, default=REPO / "jaxeval/assets/agent_bench_sample")
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    assert tokenizer("a")["input_ids"] == tokenizer("a", add_special_tokens=False)["input_ids"], \
        "the item sizes assume a tokenizer that adds no BOS/EOS"
    rng = random.Random(SEED)
    out_dir = args.out / "facts"
    out_dir.mkdir(parents=True, exist_ok=True)
    for split, (n_tokens, n_items, file_name, wikitext_split) in SPLITS.items():
        items = build_split(tokenizer, rng, read_articles(args.text_dir / file_name), n_tokens, n_items,
                            split, wikitext_split)
        path = out_dir / f"{split}-00000-of-00001.parquet"
        pq.write_table(pa.Table.from_pylist(items, schema=FACTS_SCHEMA), path, compression="zstd")
        distances = [t["distance_tokens"] for item in items for t in item["targets"]]
        print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}: {len(items)} items, "
              f"{len(distances)} queries, distance {min(distances)}..{max(distances)} tokens")


if __name__ == "__main__":
    main()
