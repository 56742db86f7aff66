"""RULER's variable-tracking generator (scripts/data/synthetic/variable_tracking.py), draw for
draw: a one-sample few-shot pass at 500 tokens, then the real samples, on shared RNG streams."""

from __future__ import annotations

import string

from jaxeval.benchmarks.ruler.fitting import Fit, RulerSkip, Streams, fit_and_draw
from jaxeval.benchmarks.ruler.niah import NOISE
from jaxeval.benchmarks.ruler.tasks import GENERATORS

VT = GENERATORS["variable_tracking"]
ICL_LENGTH = 500


class VariableTracking:
    def __init__(self, args: dict, template: str, tokens, max_seq_length: int, tokens_to_generate: int, seed: int):
        if args["type_haystack"] != "noise":
            raise ValueError("RULER's vt runs on the noise haystack only (synthetic.yaml)")
        self.chains, self.hops = args["num_chains"], args["num_hops"]
        self.template, self.tokens, self.streams = template, tokens, Streams(seed)
        self.max_seq_length, self.tokens_to_generate = max_seq_length, tokens_to_generate

    def _name(self, k: int) -> str:
        return "".join(self.streams.rng.choices(string.ascii_uppercase, k=k)).upper()

    def _chains(self, is_icl: bool):
        k, hops = (3, min(10, self.hops)) if is_icl else (5, self.hops)
        names = [self._name(k) for _ in range((hops + 1) * self.chains)]
        while len(set(names)) < self.chains * (hops + 1):  # duplicates stay: a longer list, more chains
            names.append(self._name(k))
        out_names, chains = [], []
        for i in range(0, len(names), hops + 1):
            these = names[i:i + hops + 1]
            out_names.append(these)
            first = "12345" if is_icl else str(self.streams.np.randint(10000, 99999))
            chain = [f"VAR {these[0]} = {first}"]
            chain += [f"VAR {these[j + 1]} = VAR {these[j]} " for j in range(hops)]
            chains.append(chain)
        return out_names, chains

    def make(self, n: int, is_icl: bool) -> tuple[str, list[str]]:
        names, chains = self._chains(is_icl)
        value = chains[0][0].split("=")[-1].strip()
        sentences = [NOISE] * n
        for chain in chains:
            positions = sorted(self.streams.rng.sample(range(len(sentences)), len(chain)))
            for pos, j in zip(positions, range(len(chain))):
                sentences.insert(pos + j, chain[j])
        context = "\n".join(sentences).replace(". \n", ".\n")
        # the few-shot pass formats the bare task template (with its prefix) whatever the model template
        template = VT.template + VT.answer_prefix if is_icl else self.template
        return template.format(context=context, query=value, num_v=self.hops + 1), names[0]

    def _randomize(self, example: str) -> str:
        for item in example.strip().split()[-self.hops - 1:]:
            example = example.replace(item, "".join(self.streams.rng.choices(string.ascii_uppercase, k=len(item))).upper())
        return example.replace("12345", str(self.streams.np.randint(10000, 99999)))

    def icl_example(self) -> str:
        """The first pass: sys_vartrack_w_noise_random(num_samples=1, max_seq_length=500), no tokens
        to generate, incremental 5; its input keeps the answer prefix."""
        inc = 5

        def sample(_, n):
            text, answers = self.make(n, True)
            return text, answers, self.tokens(text)

        fit = Fit(inc, inc, lambda per: max(int((ICL_LENGTH / per) * 3), inc * 2),
                  lambda n: self.tokens(self.make(n, True)[0]), 0, sample)
        _, drawn, stuck = fit_and_draw(fit, ICL_LENGTH, 1, "vt few-shot example")
        if stuck:
            raise RulerSkip(stuck)
        [(text, answers, _)] = drawn
        return text + " " + " ".join(answers) + "\n"

    def fit(self, example: str) -> Fit:
        inc, ttg = (5 if self.max_seq_length < 4096 else 10), self.tokens_to_generate
        example_tokens = self.tokens(example)
        head = VT.template[:20]

        def sample(_, n):
            text, answers = self.make(n, False)
            cut = text.index(head)
            text = text[:cut] + self._randomize(example) + "\n" + text[cut:]
            return text, answers, {}, self.tokens(text) + ttg

        return Fit(inc, inc, lambda per: max(int((self.max_seq_length / per) * 3), inc * 2),
                   lambda n: self.tokens(self.make(n, False)[0]), example_tokens + ttg, sample)
