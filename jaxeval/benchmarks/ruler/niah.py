"""RULER's needle-in-a-haystack generator (scripts/data/synthetic/niah.py), draw for draw."""

from __future__ import annotations

import uuid

import numpy as np

from jaxeval.benchmarks.ruler import inputs
from jaxeval.benchmarks.ruler.fitting import Fit, Streams

NEEDLE = "One of the special magic {type_needle_v} for {key} is: {value}."
NOISE = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
DEPTHS = [int(d) for d in np.round(np.linspace(0, 100, num=40, endpoint=True)).astype(int)]


class Niah:
    def __init__(self, args: dict, template: str, tokens, max_seq_length: int, tokens_to_generate: int,
                 seed: int, essay: str | None):
        self.a = dict(args)
        self.a["num_needle_k"] = max(args["num_needle_k"], args["num_needle_q"])
        self.template, self.tokens, self.streams = template, tokens, Streams(seed)
        self.max_seq_length, self.tokens_to_generate = max_seq_length, tokens_to_generate
        if args["type_haystack"] == "essay":
            self.essay = essay
        self.words = inputs.niah_words() if "words" in (args["type_needle_k"], args["type_needle_v"]) else None

    def _random(self, kind: str) -> str:
        rng = self.streams.rng
        if kind == "numbers":
            return str(rng.randint(10 ** 6, 10 ** 7 - 1))
        if kind == "words":
            return self.words[rng._randbelow(len(self.words))]  # random.choice's draw, on the indexed list
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    def make(self, n: int) -> tuple[str, list[str]]:
        a, rng = self.a, self.streams.rng
        keys, values, needles = [], [], []
        for _ in range(a["num_needle_k"]):
            keys.append(self._random(a["type_needle_k"]))
            value = []
            for _ in range(a["num_needle_v"]):
                value.append(self._random(a["type_needle_v"]))
                needles.append(NEEDLE.format(type_needle_v=a["type_needle_v"], key=keys[-1], value=value[-1]))
            values.append(value)
        self.streams.fresh_shuffle(needles)
        if a["type_haystack"] == "essay":
            sents = inputs.essay_sentences(self.essay, n)
            cuts = [0] + sorted(int(len(sents) * (d / 100)) for d in rng.sample(DEPTHS, len(needles))) + [len(sents)]
            parts = []
            for i in range(1, len(cuts)):
                parts.append(" ".join(sents[cuts[i - 1]:cuts[i]]))
                if i - 1 < len(needles):
                    parts.append(needles[i - 1])
            context = " ".join(parts)
        else:
            if a["type_haystack"] == "noise":
                sentences = [NOISE] * n
            else:
                sentences = [NEEDLE.format(type_needle_v=a["type_needle_v"], key=self._random(a["type_needle_k"]),
                                           value=self._random(a["type_needle_v"])) for _ in range(n)]
            for index, element in zip(sorted(rng.sample(range(n), len(needles)), reverse=True), needles):
                sentences.insert(index, element)
            context = "\n".join(sentences)
        picked = rng.sample(range(a["num_needle_k"]), a["num_needle_q"])
        queries = [keys[i] for i in picked]
        answers = [v for i in picked for v in values[i]]
        query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
        template, type_needle_v = self.template, a["type_needle_v"]
        if a["num_needle_q"] * a["num_needle_v"] == 1:  # the singular rewrite, over the whole template
            template = (template.replace("Some", "A").replace("are all", "is").replace("are", "is")
                        .replace("answers", "answer"))
            type_needle_v = type_needle_v[:-1]
        return template.format(type_needle_v=type_needle_v, context=context, query=query), answers

    def incremental(self) -> int:
        if self.a["type_haystack"] == "essay":
            return 500
        return 5 if self.max_seq_length < 4096 else 25

    def fit(self) -> Fit:
        inc, ttg = self.incremental(), self.tokens_to_generate

        def sample(_, n):
            text, answers = self.make(n)
            return text, answers, {}, self.tokens(text) + ttg

        return Fit(inc, inc, lambda per: max(int((self.max_seq_length / per) * 3), inc * 2),
                   lambda n: self.tokens(self.make(n)[0]), ttg, sample)
