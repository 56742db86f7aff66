"""Worked examples of HELMET's own scoring (princeton-nlp/HELMET @ 4526dfbd: data.py, utils.py,
eval_alce.py, scripts/eval_gpt4_*.py, scripts/collect_results.py) on small hand-made files in
HELMET's output layout. Each expected value is derived by hand from upstream's code (see the
comments), and jaxeval's re-scoring must reproduce it exactly."""

from __future__ import annotations

import json
import re

from helmet_helpers import FakeJudge

from jaxeval.benchmarks.helmet import alce, judging
from jaxeval.benchmarks.helmet.rescore import rescore
from jaxeval.benchmarks.helmet.scoring import score_alce, score_item


def helmet_file(path, dataset, items, averaged, length=8192, score=None):
    """A file as eval.py writes it (items carry their metrics); `score`: a sibling .score file."""
    path.write_text(json.dumps({"args": {"datasets": dataset, "input_max_length": length}, "data": items,
                                "metrics": {}, "averaged_metrics": averaged, "throughput": 1.0}))
    if score is not None:
        (path.parent / (path.name + ".score")).write_text(json.dumps(score))
    return path


def nli_by_words(prompt: str) -> str:
    premise, hypothesis = re.match(r"premise: (.*) hypothesis: (.*)", prompt, flags=re.DOTALL).groups()
    words = lambda t: set(re.findall(r"\w+", t.lower()))  # noqa: E731
    return "1" if words(hypothesis) <= words(premise) else "0"


def test_multi_lexsum_parses_after_summary_prefix(tmp_path):
    # load_multi_lexsum's post_process: parse_output(output, "Summary:") -> "The court ruled."; EM of
    # the raw output is 0, of the parsed one 1 -> exact_match 100 (the "Answer:" parse keeps the prefix: 0).
    item = {"id": "x", "question": "", "answer": "The court ruled.", "output": "Summary: The court ruled.\nMore.",
            "parsed_output": "The court ruled.", "exact_match": True, "input_len": 7000, "output_len": 9}
    metrics, extra = score_item("multi_lexsum_7492", item)
    assert metrics["exact_match"] is True and extra["parsed_output"] == "The court ruled."
    path = helmet_file(tmp_path / "multi_lexsum.json", "multi_lexsum_7492", [item],
                       {"exact_match": 100.0, "input_len": 7000.0, "output_len": 9.0})
    check = rescore(path)["units"][0]["official_check"]
    assert check["identical"] and check["items_compared"] == 1 and check["items_differing"] == 0


def test_per_item_saved_metrics_are_compared(tmp_path):
    items = [{"question": "k", "answer": ["v1"], "output": "Corresponding value: v1", "parsed_output": "v1",
              "substring_exact_match": True},
             {"question": "k", "answer": ["v2"], "output": "Corresponding value: no", "parsed_output": "no",
              "substring_exact_match": True}]  # wrong on purpose: "v2" is not in "no"
    check = rescore(helmet_file(tmp_path / "kv.json", "json_kv", items, {}))["units"][0]["official_check"]
    assert check["items_compared"] == 2 and check["items_differing"] == 1
    assert check["examples"][0] == {"item": 1, "differences": {"substring_exact_match": [True, False]}}


def test_alce_output_preparation_im_end_and_length(tmp_path):
    # eval_alce: re.sub(r"\n+", " ") and "<|im_end|>" deleted -> preds ["paris", "lyon"]: rec_top5 = 1,
    # prec 1, num_preds 2 (unscaled); str_em / str_hit 0 (no qa_pairs); length = 2 words.
    items = [{"question": "Cities?", "answers": [["Paris"], ["Lyon"]], "output": "Paris,\n\nLyon<|im_end|>",
              "docs": []}]
    official = {"length": 2.0, "str_em": 0, "str_hit": 0, "num_preds": 2.0, "qampari_prec": 100.0,
                "qampari_rec": 100.0, "qampari_rec_top5": 100.0, "qampari_f1": 100.0, "qampari_f1_top5": 100.0}
    path = helmet_file(tmp_path / "alce_qampari_30.json", "alce_qampari_30", items, {}, score=official)
    check = rescore(path)["units"][0]["official_check"]
    assert check["identical"] and check["compared"] == len(official)
    # ASQA length: newlines -> one space, citations removed: "Paris is big. Rome." = 4 words
    per_item, _ = score_alce("alce_asqa_30", [{"output": "Paris is big [1].\n\nRome [2].",
                                               "qa_pairs": [{"short_answers": ["Rome"]}]}])
    assert per_item[0]["length"] == 4 and per_item[0]["str_em"] == 1.0


def test_alce_short_sentences_dropped_and_citations_beyond_shown_docs():
    # "Yes." and "No." are under 5 characters: eval_alce drops them -> 1 sentence, supported by [1].
    docs = [{"title": "Paris", "text": "Paris is the capital of France."}]
    split = alce.sentence_splitter()[0]
    scores = alce.citation_scores("Paris is the capital of France [1]. Yes. No.", docs,
                                  alce.NLIChecker(FakeJudge(nli_by_words)), split)
    assert scores == {"citation_rec": 1.0, "citation_prec": 1.0}
    # alce_asqa_2 shows 2 docs, but HELMET saves every retrieved doc and checks a citation against
    # len(item["docs"]): [3] is in range and doc 3 entails the sentence -> recall 1, precision 1.
    three = [{"title": "A", "text": "nothing"}, {"title": "B", "text": "nothing"},
             {"title": "Rome", "text": "Rome is the capital of Italy."}]
    item = {"question": "q", "output": "Rome is the capital of Italy [3].", "docs": three,
            "qa_pairs": [{"short_answers": ["Rome"]}]}
    per_item, _ = score_alce("alce_asqa_2", [item], nli=FakeJudge(nli_by_words))
    assert per_item[0]["citation_rec"] == 1.0 and per_item[0]["citation_prec"] == 1.0


def test_summ_judge_zero_sentence_count_scores_zero_and_fenced_json():
    # eval_gpt4_summ: prec = 0 when sentence_count is 0 (the item still counts: f1 0); a reply whose
    # last {...} does not parse falls back to its last ```json block.
    items = [{"output": "S.", "keypoints": ["a", "b"], "expert_summary": "E."},
             {"output": "T.", "keypoints": ["a", "b"], "expert_summary": "E."}]
    replies = iter(['{"fluency": 1}', '```json\n{"recall": 1, "why": {"k": 1}}\n```',
                    '{"precision": 1, "sentence_count": 1}',
                    '{"fluency": 1}', '{"recall": 2}', '{"precision": 0, "sentence_count": 0}'])
    got = judging.summ_judgements(items, FakeJudge(lambda p: next(replies)), book=False)
    # item 1: R = 1/2, P = 1/1 -> 1 * 2 * (0.5 * 1) / 1.5; item 2: R = 1, P = 0 -> 0
    assert got[0]["score"] == 1 * 2 * (0.5 * 1.0) / (0.5 + 1.0) and got[1] == {
        "score": 0, "error": None, "fluency": 1, "recall": 1.0, "precision": 0}
    summaries, raw = judging.summ_summary(got)
    assert summaries["gpt4_f1"]["judged"] == 2 and raw["gpt-4-f1"] == (2 / 3 + 0) / 2


def test_judged_narrativeqa_file_rescored_from_saved_scores(tmp_path):
    # eval_gpt4_longqa: gpt-4-score = (1*3 + 1*2) / 2 = 2.5 (the unjudged item is skipped);
    # collect_results: 2.5 * 1 * (100/3) = 83.33333333333334 (2.5 * 100 / 3 would be ...33).
    items = [{"question": "Who?", "answer": ["Ada"], "output": "Ada", "gpt-4-scores": {"fluency": 1, "correctness": 3}},
             {"question": "Who?", "answer": ["Ada"], "output": "Ada L.", "gpt-4-scores": {"fluency": 1, "correctness": 2}},
             {"question": "Who?", "answer": ["Ada"], "output": "", "gpt-4-scores": None}]
    plain = [{k: v for k, v in it.items() if k != "gpt-4-scores"} for it in items]
    helmet_file(tmp_path / "narrativeqa_7892_v1_x.json", "narrativeqa_7892", plain, {})
    helmet_file(tmp_path / "narrativeqa_7892_v1_x-gpt4eval_o.json", "narrativeqa_7892", items, {"gpt-4-score": 2.5})
    result = rescore(tmp_path)  # the folder: the judged copy replaces the plain file
    assert len(result["units"]) == 1
    unit = result["units"][0]
    assert unit["headline"] == {"gpt4_score": 83.33333333333334}
    assert unit["averaged_metrics"]["gpt-4-score"] == 2.5 and unit["official_check"]["identical"]
    assert unit["judge"]["gpt4_score"]["judged"] == 2 and unit["judge"]["gpt4_score"]["failed"] == 1
    assert result["collect"]["8k"]["categories"]["longqa"]["score"] == 83.33333333333334


def test_judged_summary_file_rescored_from_saved_scores(tmp_path):
    # eval_gpt4_summ averages with np.mean over the items holding gpt-4-scores; collect_results x 100.
    saved = lambda f1: {"fluency": 1, "recall": 0.5, "precision": 1.0, "f1": f1}  # noqa: E731
    items = [{"id": 1, "answer": ["E"], "output": "S", "gpt-4-scores": saved(0.6)},
             {"id": 2, "answer": ["E"], "output": "S", "gpt-4-scores": saved(0.7)},
             {"id": 3, "answer": ["E"], "output": "S"}]
    # np.mean([0.6, 0.7]) = (0.6 + 0.7) / 2 = 0.6499999999999999 in floats
    official = {"gpt-4-f1": (0.6 + 0.7) / 2, "gpt-4-recall": 0.5, "gpt-4-precision": 1.0, "gpt-4-fluency": 1.0}
    path = helmet_file(tmp_path / "infbench_sum_eng_6792-gpt4eval_o.json", "infbench_sum_eng_6792", items, official)
    unit = rescore(path)["units"][0]
    assert unit["headline"] == {"gpt4_f1": 64.99999999999999} and unit["official_check"]["identical"]
    assert unit["official_check"]["compared"] >= 4


def test_jaxeval_judged_results_rescored_without_a_judge(tmp_path, tokenizer):
    from helmet_helpers import SAMPLE, FakeModel

    from jaxeval.benchmarks.helmet.runner import run_helmet
    from jaxeval.benchmarks.helmet.tasks import helmet_units

    units = [u for u in helmet_units(("longqa",), ["8k"]) if u.dataset.startswith("narrativeqa")]
    replies = iter(['{"fluency": 1, "correctness": 3}', '{"fluency": 1, "correctness": 2}'])
    section = run_helmet(FakeModel(tokenizer, " a"), units, SAMPLE, limit=2, judge=FakeJudge(lambda p: next(replies)))
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"details": {"helmet": section}}))
    unit = rescore(path)["units"][0]
    assert unit["averaged_metrics"]["gpt4_score"] == 2.5 * (100 / 3) and unit["official_check"]["identical"]
    assert "gpt4_score" not in unit["official_check"]["differences"] and unit["judge"]["gpt4_score"]["judged"] == 2


def test_category_and_overall_sums_follow_collect_results_column_order():
    from jaxeval.benchmarks.helmet.scoring import collect

    # custom_avgs["RAG"] = nq, hotpotqa, popqa, triviaqa: (33.333333333333336 + 66.66666666666667
    # + 10.0 + 66.66666666666666) / 4 = 44.166666666666664 (nq, triviaqa, hotpotqa, popqa: ...67)
    sub = "substring_exact_match"
    results = {("kilt_nq", "8k"): {sub: 100 / 3}, ("kilt_hotpotqa", "8k"): {sub: 200 / 3},
               ("kilt_popqa_3", "8k"): {sub: 10.0}, ("kilt_triviaqa", "8k"): {sub: 66.66666666666666}}
    row = collect(results)["8k"]
    assert row["categories"]["rag"]["score"] == 44.166666666666664 and row["categories"]["rag"]["complete"]
    # only RAG present: collect_results' pandas mean skips the missing categories; jaxeval's strict
    # "overall" waits for all seven
    assert row["overall"] is None and row["overall_as_collect_results"] == 44.166666666666664


def test_alce_json_keeps_eval_py_default_metrics(tmp_path):
    # eval.py scores ALCE items with its default post-process against `answer` before eval_alce runs.
    # raw "paris is big 1 rome 2" vs gold "paris is big": SubEM 1, EM 0, F1 2*(3/6)*1/1.5 = 2/3;
    # parsed (no "Answer:", first line) "paris is big 1": F1 = 2*0.75*1/1.75 -> max 1.5/1.75.
    item = {"question": "q", "answer": "Paris is big.", "output": "Paris is big [1].\n\nRome [2].",
            "qa_pairs": [{"short_answers": ["Rome"]}], "docs": [], "input_len": 10, "output_len": 5}
    official = {"substring_exact_match": 100.0, "exact_match": 0.0, "f1": 2 * 0.75 * 1.0 / 1.75 * 100,
                "input_len": 10.0, "output_len": 5.0}
    path = helmet_file(tmp_path / "alce_asqa_30.json", "alce_asqa_30", [item], official,
                       score={"str_em": 100.0, "str_hit": 100.0, "length": 4.0})
    check = rescore(path)["units"][0]["official_check"]
    assert check["identical"] and check["compared"] == 8
