"""RULER tests: nltk's punkt tables from the test data (they cannot be downloaded in CI)."""

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def punkt_tables():
    import nltk

    if str(DATA / "nltk_data") not in nltk.data.path:
        nltk.data.path.insert(0, str(DATA / "nltk_data"))


@pytest.fixture(scope="session")
def shipped_files():
    from jaxeval.benchmarks.ruler.inputs import DEFAULT_FILES

    return {**{kind: str(path) for kind, path in DEFAULT_FILES.items()}, "english_words": None}
