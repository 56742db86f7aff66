"""cwe at long lengths: the shipped english_words stand-in (SCOWL + wonderwords) takes over where a
sample needs more distinct words than the wonderwords lists hold, a length needing more than any
list holds is a counted skip naming --ruler_english_words, and the results say which list was used."""

import json
import re
import types

import pytest

from jaxeval.benchmarks.ruler import inputs
from jaxeval.benchmarks.ruler.fitting import RulerSkip
from jaxeval.benchmarks.ruler.samples import SampleSpec, official_records
from jaxeval.benchmarks.ruler.tasks import MODEL_TEMPLATES


class WhitespaceTokenizer:
    """One token per word and per index: the cheapest tokenizer there can be, so the most
    distinct words a cwe sample of a given length can need."""

    def tokenize(self, text):
        return text.split()


def spec(length, english_words=None):
    files = {"english_words": english_words}
    return SampleSpec("cwe", length, 42, "base", MODEL_TEMPLATES["base"], files)


def distinct_words(row):
    context = row["input"].rsplit("Memorize the ones that appear most often.\n", 1)[1].split("\nQuestion:")[0]
    return set(re.findall(r"\d+\. (\D+?)(?= \d+\. |$)", context))  # "1. w 2. w ..." (a word may hold a space)


def test_the_stand_in_is_large_enough_for_a_million_tokens():
    standin = inputs.english_words(str(inputs.DEFAULT_FILES["english_words"]))
    assert len(standin) == len(set(standin)) == 115_500
    assert set(inputs.cwe_words()) <= set(standin)  # the wonderwords words are in it


def test_cwe_generates_at_131072_tokens_with_the_embedded_tokenizer(tokenizer):
    _, rows, stuck = official_records(spec(131072), tokenizer, 1)
    assert stuck is None and len(rows) == 1
    assert 0.85 * 131072 <= rows[0]["length"] <= 131072
    assert len(rows[0]["outputs"]) == 10


def test_a_sample_needing_more_words_than_wonderwords_draws_the_stand_in():
    _, rows, stuck = official_records(spec(131072), WhitespaceTokenizer(), 1)
    assert stuck is None and 0.85 * 131072 <= rows[0]["length"] <= 131072
    words = distinct_words(rows[0])
    assert len(words) > len(inputs.cwe_words())  # beyond wonderwords: RULER's english_words.json path
    assert words <= set(inputs.english_words(str(inputs.DEFAULT_FILES["english_words"])))


def test_more_words_than_the_list_holds_is_a_skip_naming_the_flag(tmp_path):
    small = tmp_path / "english_words.json"
    small.write_text(json.dumps({str(i): f"w{i}" for i in range(9000)}))
    with pytest.raises(RulerSkip, match=r"cwe needs \d+ distinct words, more than the 9000 words of "
                                        r"--ruler_english_words .*english_words.json: name a larger"):
        official_records(spec(262144, str(small)), WhitespaceTokenizer(), 1)
    # the shipped list at a million whitespace tokens (more words than any real tokenizer needs)
    with pytest.raises(RulerSkip, match="more than the 115500 words of the shipped stand-in list: name a larger "
                                        "english_words.json with --ruler_english_words"):
        official_records(spec(1048576), WhitespaceTokenizer(), 1)


def test_the_skip_is_counted_in_the_unit(tmp_path):
    from jaxeval.benchmarks.ruler.runner import RulerRun, run_unit

    small = tmp_path / "english_words.json"
    small.write_text(json.dumps({str(i): f"w{i}" for i in range(9000)}))
    run = RulerRun(("cwe",), (262144,), 42, 3, "base", MODEL_TEMPLATES["base"], {"english_words": str(small)},
                   None, False, {})
    unit, records = run_unit(types.SimpleNamespace(tokenizer=WhitespaceTokenizer()), run, "cwe", 262144, None,
                             None, 1, False)
    assert unit["samples"] == 0 and unit["skipped"] == 3 and records == []
    assert "--ruler_english_words" in unit["skip_reason"]


def test_the_results_name_the_list_used(tmp_path):
    from jaxeval.benchmarks.ruler.benchmark import RulerSettings, _data

    files, described = _data(RulerSettings(), ["cwe"])
    assert files["english_words"].endswith("english_words_standin.txt")
    assert described["english_words"]["shipped"] and "SCOWL" in described["english_words"]["about"]
    assert len(described["english_words"]["sha256"]) == 64
    users = tmp_path / "english_words.json"
    users.write_text(json.dumps({"0": "apple", "1": "pear"}))
    files, described = _data(RulerSettings(english_words=str(users)), ["cwe"])
    assert files["english_words"] == str(users) and not described["english_words"]["shipped"]
    assert "english_words" not in _data(RulerSettings(), ["vt"])[1]


@pytest.mark.parametrize("content, message", [
    ("", "empty file"), ("[1, 2]", "expected a non-empty JSON object"), ("{", "not JSON"),
])
def test_a_bad_english_words_file_is_one_line(tmp_path, content, message):
    from jaxeval.benchmarks.ruler.benchmark import RulerSettings, _data
    from jaxeval.errors import DataError

    bad = tmp_path / "english_words.json"
    bad.write_text(content)
    inputs.english_words.cache_clear()
    with pytest.raises(DataError, match=f"--ruler_english_words .*{message}"):
        _data(RulerSettings(english_words=str(bad)), ["cwe"])


def test_the_stand_in_list_is_a_listed_deviation():
    from jaxeval.benchmarks.ruler.benchmark import RulerSettings, _data
    from jaxeval.benchmarks.ruler.summary import summarize

    _, described = _data(RulerSettings(), ["vt", "cwe"])
    result = {"mode": "generate", "units": [], "averages": {}, "effective_length": None, "official_score": True,
              "seed": 42, "num_samples": 1, "limit": None, "data": described, "template": "base",
              "skipped_lengths": {}}
    assert summarize(result)["deviations"] == [
        "jaxeval's shipped licence-clean stand-ins for RULER's english_words (see data): scores are not "
        "comparable with RULER's published numbers"]
