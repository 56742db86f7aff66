"""One test per quirk of the official LongBench scorer and prompt pipeline (docs/provenance.md#longbench)."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator

import numpy as np
import pytest

from jaxeval.benchmarks.longbench import metrics as lb
from jaxeval.benchmarks.longbench.data import LongBenchRecord
from jaxeval.benchmarks.longbench.metrics import ScoringOptions
from jaxeval.benchmarks.longbench.prompts import build_prompt
from jaxeval.benchmarks.longbench.requests import build_request
from jaxeval.benchmarks.longbench.runner import generate_predictions, resolve_max_length
from jaxeval.benchmarks.longbench.scoring import (
    PredictionRow, e_scores, length_bucket, score_rows, score_sample, v1_score,
)
from jaxeval.benchmarks.longbench.tasks import CONFIG_DIR, MODEL_PROMPT_BUDGETS, TASKS
from jaxeval.benchmarks.longbench.truncation import prompt_budget, truncate_middle
from jaxeval.errors import ConfigError, DataError
from jaxeval.metrics.edit_similarity import fuzz_ratio
from jaxeval.metrics.rouge_pltrdy import lcs_walk, rouge_l_summary_f, rouge_sentences
from jaxeval.metrics.token_f1 import normalize_token_zh
from longbench_helpers import EchoBackend


def lb_record(dataset: str, context: str, input_: str = "", answers=("x",), config=None) -> LongBenchRecord:
    return LongBenchRecord(id="a" * 48, input=input_, context=context, answers=tuple(answers), length=10,
                           dataset=dataset, language="en", all_classes=None, config=config or dataset, index=0)


def walk_pair(calls: int, chinese: bool = False) -> tuple[str, str]:
    """(hypothesis, reference): one sentence each, whose LCS walk nests `calls` calls."""
    if chinese:
        return " ".join(["我"] + ["的"] * (calls - 501)), " ".join(["我"] + ["好"] * 499)
    return " ".join(["z"] + ["y"] * (calls - 501)), " ".join(["z"] + ["x"] * 499)


# 1. pltrdy rouge 1.0.1 summary-level ROUGE-L with set semantics
def test_quirk_01_rouge_is_pltrdy_summary_level_with_sets():
    assert rouge_sentences("3.5 apples. Two  pears") == ["3", "5 apples", "Two pears"]  # "." only
    assert rouge_l_summary_f("a b a b", "a b") == 0.999999995  # distinct words in m and n
    # union of per-pair LCS word sets: no sentence pair shares more than one word
    assert rouge_l_summary_f("a c. b d", "a b. c d") == 0.999999995
    words, moves = lcs_walk(["a", "b", "c"], ["b", "a", "c"])  # strict ">" sends ties to the hypothesis
    assert words == {"b", "c"} and moves == 3
    assert rouge_l_summary_f("the cat", "the cat") == 2 * 1 * 1 / (1 + 1 + 1e-8)  # the 1e-8
    assert rouge_l_summary_f("The Cat,", "the cat") == 0.0  # no case or punctuation normalisation


# 2. exceptions give 0.0, RecursionError on long single-sentence pairs included
@pytest.mark.parametrize("calls,zero_en,zero_zh", [(989, False, False), (990, False, False),
                                                   (991, False, True), (992, True, True)])
def test_quirk_02_rouge_errors_score_zero_at_the_measured_recursion_limits(calls, zero_en, zero_zh):
    # walk_pair drops its reference words at small i and ends on a match: no call adds a level
    # on 3.11+, so the official eval.py scores up to 991 nested calls (en), 990 (zh)
    for recursion in ("python3.11", "python3.12+"):
        options = ScoringOptions(rouge_recursion=recursion)
        assert (lb.rouge_score(*walk_pair(calls), options=options) == 0.0) is zero_en
        assert (lb.rouge_zh_score(*walk_pair(calls, chinese=True), options=options) == 0.0) is zero_zh
    older = ScoringOptions(rouge_recursion="python3.8-3.10")  # the bottom call adds one
    assert (lb.rouge_score(*walk_pair(calls - 1), options=older) == 0.0) is zero_en
    assert (lb.rouge_zh_score(*walk_pair(calls - 1, chinese=True), options=older) == 0.0) is zero_zh
    unlimited = ScoringOptions(rouge_recursion="none")
    assert lb.rouge_score(*walk_pair(1200), options=unlimited) > 0.0


def walk_shape(shape: str, n: int) -> tuple[str, str]:
    """(hypothesis, reference) with a single sentence each, of a given LCS walk shape."""
    a, b = [f"a{i}" for i in range(n)], [f"b{i}" for i in range(n)]
    ref, hyp = {
        "chain": (a + ["z"], b + ["z"]),  # 1 match, then n hypothesis drops at i = n, the bottom
        "identical": (a, a),  # n matches, the bottom
        "refdrop": (["c"] + a + ["y"], ["c", "y"]),  # 1 match, n reference drops at j = 1, 1 match
        "short_ref_chain_256": (a[:256] + ["z"], b + ["z"]),  # as chain, at i = 256 (a cached int)
        "short_ref_chain_257": (a[:257] + ["z"], b + ["z"]),  # at i = 257: not a cached int
    }[shape]
    return " ".join(hyp), " ".join(ref)


# Deepest n that the official eval.py still scores, found by running it (`python eval.py
# --model X`: <module> -> scorer -> rouge_score [-> rouge_zh_score's extra frame] -> rouge
# 1.0.1, jieba 0.42.1, default recursion limit 1000) on these shapes for n near the limit
# under CPython 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1 and 3.13.0. The stack leaves 991
# levels (990 for zh); each version's comparisons add 0-2 levels per call (RecursionModel):
# 3.11 loses one on chain-like walks that end on a drop at an index above 256, 3.8-3.10 one
# at the bottom call. (jaxeval's first version allowed 991/990 nested calls on 3.11+: right
# for 3.12+, but it scored chain and short_ref_chain_257 at n = 989 (en), which 3.11 zeroes.)
DEEPEST_SCORED = {
    "python3.11": {"chain": 988, "identical": 990, "refdrop": 988, "short_ref_chain_256": 989,
                   "short_ref_chain_257": 988},
    "python3.12+": {"chain": 989, "identical": 990, "refdrop": 988, "short_ref_chain_256": 989,
                    "short_ref_chain_257": 989},
    "python3.8-3.10": {"chain": 988, "identical": 989, "refdrop": 987, "short_ref_chain_256": 988,
                       "short_ref_chain_257": 988},
}


@pytest.mark.parametrize("recursion", list(DEEPEST_SCORED))
@pytest.mark.parametrize("shape", list(DEEPEST_SCORED["python3.11"]))
def test_quirk_02_recursion_error_zeroes_rouge_exactly_where_the_official_eval_overflows(recursion, shape):
    options, unlimited = ScoringOptions(rouge_recursion=recursion), ScoringOptions(rouge_recursion="none")
    for metric, deepest in ((lb.rouge_score, DEEPEST_SCORED[recursion][shape]),
                            (lb.rouge_zh_score, DEEPEST_SCORED[recursion][shape] - 1)):  # one frame more
        pair = walk_shape(shape, deepest)
        assert metric(*pair, options=options) == metric(*pair, options=unlimited) > 0
        pair = walk_shape(shape, deepest + 1)
        assert metric(*pair, options=options) == 0.0 and metric(*pair, options=unlimited) > 0


def test_quirk_02_recursion_models_and_old_option_name():
    # chain at n = 989: 991 calls (1 match, 989 drops at i = 989, the bottom at j = 0); the
    # drop at j = 1 compares the tuple key (988, 1) with the stored one and the int 988 (not
    # cached), two levels: 990 + 2 = 992 > 991 on 3.11; 3.12+ counts none of it: 991 <= 991
    ref, hyp = walk_shape("chain", 989)[1].split(" "), walk_shape("chain", 989)[0].split(" ")
    assert lcs_walk(ref, hyp)[1] + 1 == 991
    models = lb.ROUGE_RECURSION_MODELS
    assert models["python3.11"]["en"].depth(ref, hyp) == 992 and models["python3.12+"]["en"].depth(ref, hyp) == 991
    assert models["python3.8-3.10"]["en"].depth(ref, hyp) == 992  # the bottom call: 991 + 1
    assert {name: model and model["zh"].slots for name, model in models.items()} == {
        "python3.11": 990, "python3.12+": 990, "python3.8-3.10": 990, "none": None}
    assert ScoringOptions().rouge_recursion == "python3.11"
    assert ScoringOptions(rouge_recursion="python3.11+").rouge_recursion == "python3.11"  # the old name
    assert lb.rouge_score(*walk_shape("chain", 989)) == 0.0  # default: the 3.11 stack
    with pytest.raises(ConfigError, match="unknown rouge_recursion"):
        ScoringOptions(rouge_recursion="python3.7")


# 3. whitespace-only hypotheses do not raise; "" and "..." do
def test_quirk_03_whitespace_hypothesis_is_one_empty_word():
    assert repr(lb.rouge_score("   ", "a.  . b")) == "0.4999999962500001"
    assert lb.rouge_score("   ", "the cat") == 0.0
    assert lb.rouge_score("", "the cat") == 0.0 and lb.rouge_score("...", "the cat") == 0.0


# 4. Chinese ROUGE: "。" is no sentence boundary; jieba tokens joined by spaces
def test_quirk_04_chinese_rouge_keeps_full_stops_inside_one_sentence():
    assert len(rouge_sentences("会议讨论了。产品设计。")) == 1
    assert len(rouge_sentences("价格是3.5元")) == 2  # an ASCII "." does split
    assert repr(lb.rouge_zh_score("会议讨论了产品设计。", "会议讨论了产品的设计方案。")) == "0.6666666618055556"


# 5. Chinese F1: jieba on the raw text, tokens normalised after; "《" kept, "》" deleted
def test_quirk_05_chinese_f1_normalises_tokens_after_segmentation():
    assert normalize_token_zh("《") == "《" and normalize_token_zh("》") == ""
    assert normalize_token_zh("“") == "" and normalize_token_zh(" A ") == "a"
    assert lb.qa_f1_zh_score("《红楼梦》", "红楼梦") < 1.0  # the "《" token survives
    assert lb.qa_f1_zh_score("红楼梦》", "红楼梦") == 1.0


# 6. English F1: ASCII punctuation deleted (not spaced), articles removed afterwards
def test_quirk_06_english_f1_normalisation_order():
    assert lb.qa_f1_score("U.S.A.", "USA") == 1.0
    assert lb.qa_f1_score("a.n apple", "apple") == 1.0  # "a.n" -> "an" -> article
    assert lb.qa_f1_score("Café “quoted”", "cafe quoted") == 0  # non-ASCII punctuation stays


# 7. max over all gold answers, starting at 0.0
def test_quirk_07_max_over_gold_answers():
    assert score_sample("triviaqa", "Paris", ["London", "paris", "Rome"]) == 1.0
    score = score_sample("qasper", "nothing", ["Paris"])
    assert score == 0.0 and isinstance(score, float)  # the metric's int 0 never wins the max
    assert score_sample("triviaqa", "x", [str(i) for i in range(182)] + ["x"]) == 1.0


# 8. first-line cut for trec, triviaqa, samsum and lsht only; only leading "\n" stripped
def test_quirk_08_first_line_cut():
    assert score_sample("triviaqa", "\n\nParis\nLondon", ["Paris"]) == 1.0
    assert score_sample("triviaqa", "\n\nParis\nLondon", ["London"]) == 0.0
    assert score_sample("triviaqa", " \nParis", ["Paris"]) == 0.0  # a space is a first line
    assert score_sample("narrativeqa", "Paris\nLondon", ["London"]) > 0.0  # not cut
    assert score_sample("qasper", "\n\nParis\nLondon", ["Paris London"]) == 1.0
    cut = {name for name, task in TASKS.items() if task.first_line_only}
    assert cut == {"trec", "triviaqa", "samsum", "lsht"}


# 9. classification: substrings both ways, list order, remove-while-iterating, 1/|L|
def test_quirk_09_classification_partial_credit_and_skip():
    assert lb.classification_score("ABC", "ABC", ["A", "AB", "ABC"]) == 0.5  # AB skipped, survives
    assert lb.classification_score("ABC", "ABC", ["AB", "ABC", "A"]) == 1.0  # order matters
    assert lb.classification_score("City or Country", "City", ["City", "Country"]) == 0.5
    assert lb.classification_score("city", "City", ["City"]) == 0.0  # case-sensitive
    with pytest.raises(DataError):
        lb.classification_score("City", "City", None)


# 10. retrieval and count: fraction of all numbers, compared as strings, Unicode digits
def test_quirk_10_retrieval_and_count_fraction_of_all_numbers():
    assert lb.retrieval_score("Paragraph 15, not Paragraph 5", "Paragraph 15") == 0.5
    assert lb.retrieval_score("Paragraph 015", "Paragraph 15") == 0.0
    assert lb.retrieval_zh_score("段落２７", "段落27") == 0.0  # "２７" is a number, not "27"
    assert lb.count_score("There are 8 unique paragraphs out of 12.", "8") == 0.5
    with pytest.raises(DataError):
        lb.retrieval_score("Paragraph 1", "the first one")


# 11. code: first line without ` # //, indentation kept, fuzz.ratio shortcuts and rounding
def test_quirk_11_code_similarity():
    assert lb.first_code_line("\n\n// c\n  x = 1 # n\n\tfoo();\nbar") == "\tfoo();"
    assert lb.first_code_line("#a\n//b\n`c`") == ""
    assert lb.code_sim_score("x = 1", "    x = 1") < 1.0  # indentation matters
    assert fuzz_ratio("", "") == 100 and fuzz_ratio("", "a") == 0  # equal first, then empty
    assert fuzz_ratio("abbbbbbb", "accccccc") == 12  # 12.5 rounds half to even
    assert fuzz_ratio("aaabbbbb", "aaaccccc") == 38


def test_quirk_11_levenshtein_is_an_explicit_option():
    try:
        import Levenshtein  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="python-Levenshtein"):
            lb.code_sim_score("a = 1", "a = 2", options=ScoringOptions(code_sim_backend="levenshtein"))
    else:  # installed: the default must still be difflib
        gold = ("        return self._client.request(method='POST', url=self._base_url + '/v1/items', "
                "headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'}, "
                "data=json.dumps(payload), timeout=30)")
        pred = "        return self._client.request(method='POST', url=url, data=payload)"
        assert lb.code_sim_score(pred, gold) == 0.44
    with pytest.raises(ConfigError):
        ScoringOptions(code_sim_backend="rapidfuzz")


# 12. all_classes comes from the last line of the prediction file
def test_quirk_12_all_classes_of_the_last_line():
    rows = [PredictionRow("City", ("City",), None, None), PredictionRow("Date", ("Date",), ("City", "Date"), None)]
    assert score_rows("trec", rows) == [1.0, 1.0]
    with pytest.raises(DataError, match="all_classes"):
        score_rows("trec", list(reversed(rows)))


# 13. v1: sequential sum, *100 then /N; E: numpy pairwise mean, then *100, numpy rounding; NaN
def test_quirk_13_aggregation_formulas():
    scores = [0.25, 1.0, 0.12, 0.0, 0.0, 0.4, 0.1, 0.4, 2 / 3, 2 / 3, 0.7, 0.4, 0.4, 0.0, 0.1, 0.2, 2 / 3, 0.1,
              0.12, 0.7, 0.0, 0.5, 0.1, 1.0, 2 / 3, 0.5, 0.5, 0.7, 0.4, 0.12, 2 / 3, 2 / 3, 0.12, 1.0, 0.5, 0.1,
              0.0, 0.25, 0.25, 1.0]
    assert round(100 * math.fsum(scores) / len(scores), 2) == 40.08  # a compensated sum (Python 3.12's sum)
    assert v1_score(scores) == 40.07 == round(100 * functools.reduce(operator.add, scores, 0.0) / 40, 2)
    bucket = [0.25, 0.2, 1.0, 0.4, 0.14, 0.2, 0.0, 0.7]
    assert v1_score(bucket) == 36.13
    assert e_scores(bucket, [100] * 8) == {"0-4k": 36.12, "4-8k": pytest.approx(math.nan, nan_ok=True),
                                           "8k+": pytest.approx(math.nan, nan_ok=True)}
    assert e_scores(bucket, [100] * 8)["0-4k"] == float(round(100 * np.mean(bucket), 2))


# 14. buckets by the record's length field: < 4000, < 8000, everything else
def test_quirk_14_length_buckets():
    assert [length_bucket(n) for n in (0, 3999, 4000, 7999, 8000, 23000)] == \
        ["0-4k", "0-4k", "4-8k", "4-8k", "8k+", "8k+"]


# 15. truncation: tokens incl. BOS, floor(max/2) each side, halves decoded and joined directly
def test_quirk_15_middle_truncation(bos_tokenizer):
    prompt = " ".join(f"w{i}" for i in range(300))
    ids = bos_tokenizer(prompt)["input_ids"]
    assert ids[0] == 0  # the BOS is counted
    result = truncate_middle(prompt, bos_tokenizer, 101)
    half = 50  # int(101 / 2) for both sides: 100 tokens kept, BOS among them
    assert result.truncated and result.raw_tokens == len(ids)
    assert result.text == (bos_tokenizer.decode(ids[:half], skip_special_tokens=True)
                           + bos_tokenizer.decode(ids[-half:], skip_special_tokens=True))
    assert len(bos_tokenizer(result.text)["input_ids"]) == 100  # 49 head + 50 tail + new BOS
    assert truncate_middle(prompt, bos_tokenizer, len(ids)).text == prompt  # at the limit: untouched
    with pytest.raises(ConfigError):
        truncate_middle(prompt, bos_tokenizer, 1)


# 16. chat template skipped for six sets; their truncation is the same
def test_quirk_16_chat_template_skipped_for_continuation_sets(tokenizer):
    skipped = {name for name, task in TASKS.items() if task.skip_chat_template}
    assert skipped == {"trec", "triviaqa", "samsum", "lsht", "lcc", "repobench-p"}
    context = "Question: Where is it ?\nType: Other location " * 40
    for dataset in ("trec", "narrativeqa"):
        request = build_request(lb_record(dataset, context, "Question: Why ?\nType:"), tokenizer, 120, "model",
                                "longbench")
        text = tokenizer.decode(list(request.prompt_ids))
        assert request.truncated and request.raw_prompt_tokens > 120
        assert text.startswith("<|im_start|>user\n") is (dataset == "narrativeqa")
        assert request.chat_format == ("none" if dataset == "trec" else "model")


# 17. samsum stops at "\n" too, after at least one token
def test_quirk_17_samsum_newline_stop(tokenizer):
    samsum = build_request(lb_record("samsum", "Dialogue: a\nSummary: b"), tokenizer, 500, "model", "longbench")
    newline = tokenizer.encode("\n", add_special_tokens=False)[-1]
    assert samsum.stop is None and samsum.min_new_tokens == 1  # the token rule only, as pred.py
    assert samsum.stop_token_ids == (tokenizer.eos_token_id, newline)
    other = build_request(lb_record("triviaqa", "Passage: a"), tokenizer, 500, "model", "longbench")
    assert other.stop is None and other.stop_token_ids is None and other.min_new_tokens == 0
    backend = EchoBackend(tokenizer, "A and B talk.")
    generate_predictions(backend, tokenizer, [samsum])
    assert backend.calls[0]["stop_token_ids"] == [tokenizer.eos_token_id, newline]
    assert backend.calls[0]["min_new_tokens"] == 1 and backend.calls[0]["stop"] is None
    assert backend.calls[0]["max_new_tokens"] == 128


# 18. templates byte for byte, single-pass substitution
def test_quirk_18_templates_byte_for_byte_and_single_pass():
    digest = hashlib.sha256((CONFIG_DIR / "dataset2prompt.json").read_bytes()).hexdigest()
    assert digest == "56d22ad4f382169c2b8a11ff4c982a4a1bea096c8152b0f0b85b64686b157c30"
    templates = json.loads((CONFIG_DIR / "dataset2prompt.json").read_text(encoding="utf-8"))
    assert all(TASKS[name].prompt_template == template for name, template in templates.items())
    assert TASKS["narrativeqa"].prompt_template.count("asconcisely") == 2
    assert "\n\n Answer the question" in TASKS["qasper"].prompt_template
    assert TASKS["passage_count"].prompt_template.endswith("The final answer is: ")
    assert TASKS["passage_retrieval_en"].prompt_template.endswith("The answer is: ")
    assert TASKS["repobench-p"].prompt_template == \
        "Please complete the code given below. \n{context}{input}Next line of code:\n"
    code = "def f(x):\n    return '{input}' + '{context}' + '{}'\n"
    prompt = build_prompt(TASKS["repobench-p"], lb_record("repobench-p", code, "y = {input}"))
    assert prompt == f"Please complete the code given below. \n{code}y = {{input}}Next line of code:\n"


# 19. max_length is the model window minus 500
def test_quirk_19_prompt_budget_is_window_minus_500():
    assert prompt_budget(4000) == 3500 and prompt_budget(32000) == 31500
    assert MODEL_PROMPT_BUDGETS["llama2-7b-chat-4k"] == 3500
    backend = EchoBackend.__new__(EchoBackend)
    backend.config = type("Config", (), {"max_position_embeddings": 8192})()
    assert resolve_max_length(None, backend) == (7692, "model window 8192 - 500")
    assert resolve_max_length(3000, backend) == (3000, "given")
    with pytest.raises(ConfigError):
        resolve_max_length(None, object())


# 20. predictions decoded with special tokens skipped, not stripped
def test_quirk_20_predictions_keep_whitespace_and_drop_special_tokens(tokenizer):
    request = build_request(lb_record("qasper", "text"), tokenizer, 500, "model", "longbench")
    backend = EchoBackend(tokenizer, "\n  Paris ", extra_tokens=[tokenizer.eos_token_id])
    assert generate_predictions(backend, tokenizer, [request]) == ["\n  Paris "]
