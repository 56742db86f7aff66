"""Secrets (judge and server API keys) never reach an output of jaxeval.

Whoever reads a secret registers it (`register`); every text that may carry one is passed
through `scrub` before it is cut, logged, printed or stored. A server may echo a key whole, cut
(OpenAI's 401 message shows its last characters) or straddling a length limit, so `scrub` masks
the whole secret and every run of at least MIN_FRAGMENT characters that is part of one. Files
jaxeval writes go through `redact` as a last net: the whole secret only, so that sample texts
which happen to share four characters with a key are stored as they are.
"""

from __future__ import annotations

import threading

MIN_FRAGMENT = 4  # shorter runs are too common in ordinary text to mean anything
MASK = "***"

_secrets: dict[str, frozenset[str]] = {}  # secret -> its substrings of MIN_FRAGMENT characters
_lock = threading.Lock()


def register(value: str | None) -> None:
    """Remember value as a secret (keys read from the environment at each request)."""
    if not value or len(value) < MIN_FRAGMENT or value in _secrets:
        return
    grams = frozenset(value[i:i + MIN_FRAGMENT] for i in range(len(value) - MIN_FRAGMENT + 1))
    with _lock:
        _secrets[value] = grams


def forget_all() -> None:
    """Drop every registered secret (tests)."""
    with _lock:
        _secrets.clear()


def _registered() -> list[tuple[str, frozenset[str]]]:
    with _lock:
        return sorted(_secrets.items(), key=lambda item: -len(item[0]))


def redact(text: str) -> str:
    """text with every whole registered secret masked."""
    for secret, _ in _registered():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub(text: str) -> str:
    """text with every registered secret and every run of >= MIN_FRAGMENT of its characters masked."""
    secrets = _registered()
    if not secrets or not isinstance(text, str):
        return text
    text = redact(text)
    for secret, grams in secrets:
        text = _mask_fragments(text, secret, grams)
    return text


def _mask_fragments(text: str, secret: str, grams: frozenset[str]) -> str:
    out, start, i = [], 0, 0
    while i <= len(text) - MIN_FRAGMENT:
        if text[i:i + MIN_FRAGMENT] not in grams:
            i += 1
            continue
        end = i + MIN_FRAGMENT
        while end < len(text) and text[i:end + 1] in secret:
            end += 1
        out += [text[start:i], MASK]
        start = i = end
    return "".join(out) + text[start:]
