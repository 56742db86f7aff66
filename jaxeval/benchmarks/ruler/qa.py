"""RULER's QA generator (scripts/data/synthetic/qa.py), draw for draw: the question's own
paragraphs plus distractors, shuffled with a fresh Random(seed), as numbered documents."""

from __future__ import annotations

from jaxeval.benchmarks.ruler import inputs
from jaxeval.benchmarks.ruler.fitting import Fit, Streams

DOCUMENT = "Document {i}:\n{document}"


class QA:
    def __init__(self, args: dict, template: str, tokens, max_seq_length: int, tokens_to_generate: int,
                 seed: int, files: dict):
        dataset = args["dataset"]
        self.questions, self.docs = (inputs.squad if dataset == "squad" else inputs.hotpotqa)(files[dataset])
        self.template, self.tokens, self.streams = template, tokens, Streams(seed)
        self.max_seq_length, self.tokens_to_generate = max_seq_length, tokens_to_generate

    def make(self, index: int, n: int) -> tuple[str, list[str]]:
        q = self.questions[index]
        own, more = q["context"], q.get("more_context", [])
        if n < len(self.docs):
            if n - len(own) > len(more):
                others = [i for i, _ in enumerate(self.docs) if i not in own + more]
                chosen = own + more + self.streams.rng.sample(others, max(0, n - len(own) - len(more)))
            else:
                chosen = own + self.streams.rng.sample(more, n - len(own))
            docs = [self.docs[i] for i in chosen]
        else:
            docs = (self.docs * ((n + len(self.docs) - 1) // len(self.docs)))[:n]
        self.streams.fresh_shuffle(docs)
        context = "\n\n".join(DOCUMENT.format(i=i + 1, document=d) for i, d in enumerate(docs))
        return self.template.format(context=context, query=q["query"]), q["outputs"]

    def fit(self) -> Fit:
        inc, ttg = 10, self.tokens_to_generate

        def sample(i, n):
            text, answers = self.make(i, n)
            return text, answers, {}, self.tokens(text) + ttg

        return Fit(inc, inc, lambda per: max(int((self.max_seq_length / per) * 3), inc * 2),
                   lambda n: self.tokens(self.make(0, n)[0]), ttg, sample)
