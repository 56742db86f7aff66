"""ALCE scoring for HELMET's citation category (ASQA, QAMPARI), as eval_alce.py computes it.

Output preparation (eval_alce.py main): every run of newlines becomes one space and "<|im_end|>"
is deleted (no strip). Citations ("[3]") are removed for str_em, `length` (words of that text) and
the QAMPARI measures. ASQA str_em = mean over qa_pairs of "some normalised short answer is a
substring of the normalised output". QAMPARI: the output (trailing "." and "," removed) split on
commas, normalised, empties dropped; rec_top5 = min(5, gold groups hit) / min(5, gold groups).

Citation recall / precision (AutoAIS) use an NLI judge: anything with the Judge interface
(jaxeval.judges.base) whose reply to "premise: P hypothesis: H" is "1" when P entails H, the
input and output format of google/t5_xxl_true_nli_mixture. Each sentence (nltk sent_tokenize,
sentences under 5 characters dropped; for QAMPARI the question + " " + each answer) is checked against its cited documents (at most
3, "Title: t\\ntext", joined by newlines); a sentence without citations or with an
out-of-range one scores 0. Precision also drops a citation when the sentence is entailed
without it. A failed judge call makes the item's citation scores None: it is counted in
`judge_failures` and left out of the means, never scored 0.
"""

from __future__ import annotations

import copy
import re
from typing import Sequence

from jaxeval.metrics.token_f1 import normalize_answer_en

AT_MOST_CITATIONS = 3


def remove_citations(sentence: str) -> str:
    return re.sub(r"\[\d+", "", re.sub(r" \[\d+", "", sentence)).replace(" |", "").replace("]", "")


def prepare_output(output: str) -> str:
    return re.sub(r"\n+", " ", output).replace("<|im_end|>", "")


def output_length(output: str) -> int:
    """eval_alce's `length`: the number of whitespace-separated words, citations removed."""
    return len(remove_citations(prepare_output(output)).split())


def asqa_str_em(output: str, qa_pairs: Sequence[dict]) -> float:
    text = normalize_answer_en(remove_citations(prepare_output(output)))
    hits = [any(normalize_answer_en(a) in text for a in pair["short_answers"]) for pair in qa_pairs]
    return sum(hits) / len(hits)


def _qampari_items(output: str) -> list[str]:
    return output.rstrip().rstrip(".").rstrip(",").split(",")


def qampari_scores(output: str, answers: Sequence[Sequence[str]]) -> dict:
    preds = [normalize_answer_en(x.strip()) for x in _qampari_items(remove_citations(prepare_output(output)))]
    preds = [p for p in preds if p]
    groups = [[normalize_answer_en(x) for x in group] for group in answers]
    flat = [x for group in groups for x in group]
    hit = sum(any(x in preds for x in group) for group in groups)
    prec = sum(p in flat for p in preds) / len(preds) if preds else 0
    rec = hit / len(groups)
    rec_top5 = min(5, hit) / min(5, len(groups))
    return {"num_preds": len(preds), "qampari_prec": prec, "qampari_rec": rec, "qampari_rec_top5": rec_top5,
            "qampari_f1": 2 * prec * rec / (prec + rec) if prec + rec else 0,
            "qampari_f1_top5": 2 * prec * rec_top5 / (prec + rec_top5) if prec + rec_top5 else 0}


def sentence_splitter():
    """(split function, name): nltk's trained English punkt when its data is installed, else
    nltk's untrained PunktSentenceTokenizer (recorded in results: may split abbreviations)."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return nltk.sent_tokenize, "nltk punkt (english)"
    except LookupError:
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        return PunktSentenceTokenizer().tokenize, "nltk PunktSentenceTokenizer (untrained; punkt_tab data not installed)"


def format_document(doc: dict) -> str:
    return "Title: %s\n%s" % (doc["title"], doc["text"])


class JudgeFailed(Exception):
    pass


class NLIChecker:
    """Entailment through a judge, cached; counts calls and failures."""

    def __init__(self, judge):
        self.judge = judge
        self.cache: dict[tuple[str, str], int] = {}
        self.calls = 0
        self.failures: list[str] = []

    def entails(self, premise: str, hypothesis: str) -> int:
        key = (premise, hypothesis)
        if key not in self.cache:
            from jaxeval.interrupt import checkpoint

            checkpoint()  # a signal's safe point between NLI calls
            self.calls += 1
            reply = self.judge.complete([f"premise: {premise} hypothesis: {hypothesis}"])[0]
            if reply.text is None:
                self.failures.append(reply.error or "judge call failed")
                raise JudgeFailed(reply.error)
            self.cache[key] = 1 if reply.text.strip() == "1" else 0
        return self.cache[key]


def citation_scores(output: str, docs: Sequence[dict], nli: NLIChecker, split_sentences,
                    question: str | None = None) -> dict | None:
    """{"citation_rec", "citation_prec"} of one item (fractions), or None when the output has
    no sentence (the item is skipped, as upstream). question given: QAMPARI claims."""
    text = prepare_output(output)
    if question is not None:
        sents = [question + " " + x.strip() for x in _qampari_items(text)]
    else:
        # eval_alce drops sentences under 5 characters (stripped), e.g. a lone "1."
        sents = [x for x in split_sentences(text) if len(x.strip()) >= 5]
    if not sents:
        return None
    entail = entail_prec = total_citations = 0
    for sent in sents:
        target = remove_citations(sent).strip()
        refs = [int(r[1:]) - 1 for r in re.findall(r"\[\d+", sent)]
        if not refs or any(r >= len(docs) for r in refs):
            joint = 0
        else:
            refs = refs[:AT_MOST_CITATIONS]
            total_citations += len(refs)
            joint = nli.entails("\n".join(format_document(docs[r]) for r in refs), target)
        entail += joint
        if joint and len(refs) > 1:
            for r in refs:
                if nli.entails(format_document(docs[r]), target):
                    entail_prec += 1
                    continue
                rest = copy.copy(refs)
                rest.remove(r)
                if not nli.entails("\n".join(format_document(docs[p]) for p in rest), target):
                    entail_prec += 1
        else:
            entail_prec += joint
    return {"citation_rec": entail / len(sents),
            "citation_prec": entail_prec / total_citations if total_citations > 0 else 0}
