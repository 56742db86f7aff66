"""Planted facts and their queries, shared by the facts sample builder and the tiny model's training.

A fact is one sentence: a name, a relation and a five-digit number ("Fiona booked flight
48213."). Its query, placed far later, asks for it and then repeats the fact's words up to
the number, so the answer follows directly:

    fact:   "Fiona booked flight 48213."
    query:  "Which flight did Fiona book? Fiona booked flight"   + answer " 48213."

The answer always starts with a space and ends with "." (the card's " 48213."), so its
character span starts at a token boundary for byte-level tokenizers that split digits.

Everything is drawn from a caller's `random.Random`, so a fixed seed gives the same facts.
Import with `sys.path` pointing at scripts/: `from planted_facts import make_facts`.
"""

from __future__ import annotations

import dataclasses
import random

# (the fact's words before the number, the question that asks for it). Past tense, one
# object noun each, so that "{name} {relation} NNNNN." reads as a sentence.
FACT_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("{name} booked flight", "Which flight did {name} book?"),
    ("{name} rented locker", "Which locker did {name} rent?"),
    ("{name} paid invoice", "Which invoice did {name} pay?"),
    ("{name} was given room", "Which room was {name} given?"),
    ("{name} ordered part", "Which part did {name} order?"),
    ("{name} drove bus", "Which bus did {name} drive?"),
    ("{name} opened account", "Which account did {name} open?"),
    ("{name} signed contract", "Which contract did {name} sign?"),
    ("{name} reserved table", "Which table did {name} reserve?"),
    ("{name} mailed parcel", "Which parcel did {name} mail?"),
    ("{name} filed claim", "Which claim did {name} file?"),
    ("{name} won ticket", "Which ticket did {name} win?"),
)

NAMES: tuple[str, ...] = (
    "Fiona", "Marcus", "Alice", "Tobias", "Greta", "Oliver", "Nadia", "Victor", "Clara",
    "Hugo", "Ingrid", "Felix", "Leona", "Rafael", "Sonja", "Dmitri", "Elena", "Jasper",
    "Mira", "Anton", "Beatrix", "Conrad", "Daphne", "Emil", "Freya", "Gideon", "Hanna",
    "Ivan", "Juliet", "Kasper", "Lydia", "Magnus", "Nora", "Oskar", "Petra", "Quentin",
    "Rosa", "Silas", "Tamara", "Ulrich", "Vera", "Walter", "Yvonne", "Zoran",
)


@dataclasses.dataclass(frozen=True)
class PlantedFact:
    name: str
    number: str  # five digits, no leading zero
    fact: str  # "Fiona booked flight 48213."
    query_prefix: str  # "Which flight did Fiona book? Fiona booked flight"
    answer: str  # " 48213." : follows query_prefix directly

    @property
    def query(self) -> str:
        """The whole query as it stands in the text: prefix and answer."""
        return self.query_prefix + self.answer


def make_fact(rng: random.Random, used_names: set[str] | frozenset[str] = frozenset(),
              used_numbers: set[str] | frozenset[str] = frozenset()) -> PlantedFact:
    """One fact whose name (and number) is not among the used ones; the caller records them."""
    free_names = [name for name in NAMES if name not in used_names]
    if not free_names:
        raise ValueError(f"all {len(NAMES)} names are used: plant fewer facts per item")
    name = rng.choice(free_names)
    relation, question = rng.choice(FACT_TEMPLATES)
    number = str(rng.randrange(10000, 100000))
    while number in used_numbers:
        number = str(rng.randrange(10000, 100000))
    prefix = relation.format(name=name)
    return PlantedFact(
        name=name,
        number=number,
        fact=f"{prefix} {number}.",
        query_prefix=f"{question.format(name=name)} {prefix}",
        answer=f" {number}.",
    )


def make_facts(rng: random.Random, count: int) -> list[PlantedFact]:
    """`count` facts with distinct names and distinct numbers (one item's facts)."""
    facts: list[PlantedFact] = []
    for _ in range(count):
        facts.append(make_fact(rng, {f.name for f in facts}, {f.number for f in facts}))
    return facts


if __name__ == "__main__":
    for planted in make_facts(random.Random(0), 3):
        print(f"{planted.fact!r:45} {planted.query_prefix!r} + {planted.answer!r}")
