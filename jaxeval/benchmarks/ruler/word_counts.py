"""RULER's aggregation generators, draw for draw: common words (cwe,
scripts/data/synthetic/common_words_extraction.py) and frequent coded words (fwe,
scripts/data/synthetic/freq_words_extraction.py)."""

from __future__ import annotations

import string

import numpy as np
from scipy.special import zeta

from jaxeval.benchmarks.ruler import inputs
from jaxeval.benchmarks.ruler.fitting import Fit, RulerSkip, Streams


class CommonWords:
    """cwe seeds only `random` (not numpy); its word list is shuffled once with Random(seed)."""

    def __init__(self, args: dict, template: str, tokens, max_seq_length: int, tokens_to_generate: int,
                 seed: int, english_words: str | None):
        self.freq_cw, self.freq_ucw, self.num_cw = args["freq_cw"], args["freq_ucw"], args["num_cw"]
        self.template, self.tokens, self.streams = template, tokens, Streams(seed)
        self.max_seq_length, self.tokens_to_generate = max_seq_length, tokens_to_generate
        self.words = list(inputs.cwe_words())
        self.streams.fresh_shuffle(self.words)
        self.english_words = english_words  # a path; None: the shipped stand-in

    def _example(self, n: int, common_repeats: int, uncommon_repeats: int) -> tuple[str, list[str]]:
        if n <= len(self.words):
            chosen = self.streams.rng.sample(self.words, n)
        else:
            chosen = self.streams.rng.sample(self._english_words(n), n)
        common, uncommon = chosen[:self.num_cw], chosen[self.num_cw:]
        word_list = common * int(common_repeats) + uncommon * int(uncommon_repeats)
        self.streams.fresh_shuffle(word_list)
        return " ".join(f"{i + 1}. {w}" for i, w in enumerate(word_list)), common

    def _english_words(self, n: int) -> tuple[str, ...]:
        """RULER's english_words.json or the shipped stand-in; fewer than n words is a skip where
        RULER's random.sample would raise."""
        shipped = str(inputs.DEFAULT_FILES["english_words"])
        path = self.english_words or shipped
        words = inputs.english_words(path)
        if n > len(words):
            which = (f"the {len(words)} words of the shipped stand-in list" if path == shipped else
                     f"the {len(words)} words of --ruler_english_words {path}")
            raise RulerSkip(f"cwe needs {n} distinct words, more than {which}: name a larger "
                            "english_words.json with --ruler_english_words")
        return words

    def make(self, n: int) -> tuple[str, list[str]]:
        if self.max_seq_length < 4096:
            shot, answer_shot = self._example(20, 3, 1)
            context, answer = self._example(n, 6, 1)
        else:
            shot, answer_shot = self._example(40, 10, 3)
            context, answer = self._example(n, self.freq_cw, self.freq_ucw)
        few_shot = self.template.format(num_cw=self.num_cw, context=shot, query="") + " " + " ".join(
            f"{i + 1}. {w}" for i, w in enumerate(answer_shot))
        return few_shot + "\n" + self.template.format(num_cw=self.num_cw, context=context, query=""), answer

    def fit(self) -> Fit:
        inc, ttg = 10, self.tokens_to_generate

        def sample(_, n):
            text, answers = self.make(n)
            return text, answers, {}, self.tokens(text) + ttg

        return Fit(inc, 4096, lambda per: max(int(self.max_seq_length // per) * 2, inc * 2),
                   lambda n: self.tokens(self.make(n)[0]), ttg, sample)


class FrequentWords:
    """fwe: no binary search; a fresh vocabulary per call, a Zipf count table over it."""

    def __init__(self, args: dict, template: str, tokens, max_seq_length: int, tokens_to_generate: int, seed: int):
        self.alpha, self.wordlen = args["alpha"], 6
        self.template, self.tokens, self.streams = template, tokens, Streams(seed)
        self.max_len = max_seq_length - tokens_to_generate
        self.vocab_size, self.incremental = self.max_len // 50, self.max_len // 32
        self.tokens_to_generate = tokens_to_generate

    def _vocab(self) -> list[str]:
        rng = self.streams.rng
        vocab = ["".join(rng.choices(string.ascii_lowercase, k=self.wordlen)) for _ in range(self.vocab_size)]
        while len(set(vocab)) < self.vocab_size:
            vocab.append("".join(rng.choices(string.ascii_lowercase, k=self.wordlen)))
        vocab = sorted(set(vocab))
        self.streams.fresh_shuffle(vocab)
        vocab[0] = "..."  # the top-ranked word is noise
        return vocab

    def _text(self, vocab: list[str], n: int) -> tuple[str, list[str]]:
        k = np.arange(1, len(vocab) + 1)
        counts = n * (k ** -self.alpha) / zeta(self.alpha)
        words = [w for w, c in zip(vocab, counts.astype(int)) for _ in range(c)]
        self.streams.fresh_shuffle(words)
        return self.template.format(context=" ".join(words), query=""), vocab[1:4]

    def _call(self, n: int | None) -> tuple[str, list[str], int]:
        """generate_input_output: n None is the first call (grow from max_len // 6, then one step back)."""
        vocab = self._vocab()
        if n is not None:
            text, answers = self._text(vocab, n)
            while self.tokens(text) > self.max_len:
                n -= self.incremental
                text, answers = self._text(vocab, n)
        else:
            n = self.max_len // self.wordlen
            text, answers = self._text(vocab, n)
            while self.tokens(text) < self.max_len:
                n += self.incremental
                text, answers = self._text(vocab, n)
            n -= self.incremental
        text, answers = self._text(vocab, n)
        return text, answers, n

    def samples(self, count: int) -> tuple[int, list[tuple], None]:
        _, _, n = self._call(None)
        out = []
        for _ in range(count):
            text, answers, _ = self._call(n)
            out.append((text, answers, {}, self.tokens(text) + self.tokens_to_generate))
        return n, out, None
