"""Chinese word segmentation with jieba (accurate mode, HMM on, default dictionary).

Scores of LongBench's Chinese sets depend on jieba's exact segmentation, so the version is
pinned (jieba==0.42.1) and recorded with every result.
"""

from __future__ import annotations

import functools
import logging

from jaxeval.errors import ConfigError

JIEBA_VERSION = "0.42.1"  # the version the official scores were computed with


@functools.cache
def _jieba():
    try:
        import jieba
    except ImportError:
        raise ConfigError(f"Chinese scoring needs jieba: pip install jieba=={JIEBA_VERSION}") from None
    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading chatter goes to stderr otherwise
    return jieba


def jieba_cut(text: str) -> list[str]:
    """jieba.cut(text, cut_all=False): whitespace and punctuation come out as tokens of their own."""
    return list(_jieba().cut(text, cut_all=False))


def jieba_version() -> str | None:
    """The installed jieba's version (None when jieba is not installed)."""
    try:
        return _jieba().__version__
    except ConfigError:
        return None
