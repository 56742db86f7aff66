"""--limit as lm-eval reads it (jaxeval.benchmarks.base): N items, or a fraction rounded up."""

from __future__ import annotations

import argparse

import pytest

from jaxeval.benchmarks.base import check_limit, limit_count, limited, parse_limit
from jaxeval.errors import ConfigError


def test_fractions_round_up_as_lm_eval_and_integers_cut():
    assert [limit_count(3, 0.4), limit_count(4, 0.6), limit_count(10, 0.05), limit_count(0, 0.5)] == [2, 3, 1, 0]
    assert [limit_count(3, 2), limit_count(3, 7), limit_count(3, None)] == [2, 3, 3]
    assert limited("abcd", 0.5) == ["a", "b"]


def test_parse_and_check():
    assert parse_limit("5") == 5 and isinstance(parse_limit("5"), int) and parse_limit("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError, match="'half'"):
        parse_limit("half")
    for bad in (0, -1, 1.5, 1.0, 0.0, True):
        with pytest.raises(ConfigError, match="positive integer or a fraction"):
            check_limit(bad)
