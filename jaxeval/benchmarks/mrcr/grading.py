"""The dataset card's grader and token bins, exactly (docs/provenance.md#openai-mrcr).

grade: a response that does not start with the random prefix scores 0 (no stripping: a leading
space or newline fails); otherwise the prefix is removed from both and the score is
difflib.SequenceMatcher(None, response, answer).ratio() with the response FIRST and autojunk on,
as the card calls it (the argument order changes about a quarter of real rows through autojunk).

Bins: prompt + answer tokens, the first bin [4096, 8192] closed, the others (lo, hi] up to 1M;
items under 4,096 tokens are in no bin (but in every mean).
"""

from __future__ import annotations

from difflib import SequenceMatcher

BIN_EDGES = tuple(2 ** p for p in range(12, 21))  # 4096 ... 1048576
BIN_TOKENIZER = "o200k_base"  # the card counts with tiktoken's o200k_base


def grade(response: str, answer: str, random_string_to_prepend: str) -> float:
    """The card's grade(); a response that is not a string (the card would raise) is a TypeError."""
    if not isinstance(response, str):
        raise TypeError(f"response must be a string, got {type(response).__name__}")
    if not response.startswith(random_string_to_prepend):
        return 0.0
    response = response.removeprefix(random_string_to_prepend)
    answer = answer.removeprefix(random_string_to_prepend)
    return float(SequenceMatcher(None, response, answer).ratio())


def _label(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens < 2 ** 20 else f"{tokens // 2 ** 20}M"


BIN_LABELS = tuple(f"{_label(lo)}-{_label(hi)}" for lo, hi in zip(BIN_EDGES, BIN_EDGES[1:]))
UNDER = "0-4k"  # below the card's first bin: in the means, in no bin of the card's
OVER = "1M+"


def bin_of(tokens: int) -> str:
    """The card's bin of an item of `tokens` prompt + answer tokens."""
    if tokens < BIN_EDGES[0]:
        return UNDER
    if tokens <= BIN_EDGES[1]:
        return BIN_LABELS[0]
    for label, hi in zip(BIN_LABELS[1:], BIN_EDGES[2:]):
        if tokens <= hi:
            return label
    return OVER


def bin_order() -> tuple[str, ...]:
    return (UNDER, *BIN_LABELS, OVER)


class BinCounter:
    """Counts tokens as the card does: every message's content encoded alone, summed, plus the
    answer. With tiktoken's o200k_base where it is importable and its table loads (cached; never
    fetched here when offline it fails and the model's tokenizer counts instead)."""

    def __init__(self, model_tokenizer, choice: str = "auto"):
        self.encode, self.name = None, None
        if choice in ("auto", "o200k_base"):
            try:
                import tiktoken

                encoding = tiktoken.get_encoding(BIN_TOKENIZER)
                self.encode = lambda text: encoding.encode(text, disallowed_special=())
                self.name = "tiktoken o200k_base (the card's)"
            except Exception as error:  # not installed, or its table is not cached offline
                if choice == "o200k_base":
                    from jaxeval.errors import ConfigError
                    raise ConfigError(f"--mrcr_bin_tokenizer o200k_base: tiktoken's o200k_base does not load "
                                      f"({type(error).__name__}: {error})") from None
        if self.encode is None:
            self.encode = lambda text: model_tokenizer(text, add_special_tokens=False)["input_ids"]
            self.name = "the evaluated model's tokenizer (tiktoken o200k_base not available)"

    @property
    def official(self) -> bool:
        return self.name.startswith("tiktoken")

    def count(self, messages: list[dict], answer: str) -> int:
        return sum(len(self.encode(m["content"])) for m in messages) + len(self.encode(answer))
