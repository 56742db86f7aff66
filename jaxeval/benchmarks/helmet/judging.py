"""Model-judged scores on saved outputs: HELMET's LongQA and summarisation judges, AgenticLU's
binary correctness judge. Prompts are data files (jaxeval/assets/helmet_data), formatted with
str.format; the judge is anything with the Judge interface of jaxeval.judges.base
(complete(prompts) -> replies with .text / .error, settings()).

Every judgement is {"score": float | None, "error": str | None}. A failed call or an
unparseable reply gives score None and its reason: it is counted and reported by
summarize_judgements and left out of the mean, never scored 0.

* LongQA (NarrativeQA): question, the gold as str.format shows it (a list: its Python repr),
  and parse_output of the output with newlines made spaces. The last {...} of the reply must
  hold fluency and correctness; score = fluency x correctness (0-3). Scores are averaged as eval_gpt4_longqa.py does (sum / count; "gpt-4-score", 0-3) and the
  headline is that mean x (100/3), collect_results' arithmetic.
* Summarisation: three prompts per item (fluency, recall over numbered keypoints, precision
  against the expert summary; "book" variants for InfBench). A reply's JSON is its last {...},
  or, when that does not parse, its last ```json fenced block (eval_gpt4_summ.py's parse_json).
  R = recall / #keypoints (0 without keypoints), P = precision / sentence_count (0 when the
  count is not positive), score = fluency * 2 * (R * P) / (R + P) (0 when R + P = 0), in that
  order of operations; an item counts only when all three replies parse. Averages with numpy's
  mean ("gpt-4-f1", "gpt-4-recall", ...), headline x 100.
* Saved judgements: HELMET's judged files (*-gpt4eval_o.json) keep each item's "gpt-4-scores"
  (None / absent when not judged), jaxeval's results each item's "judge"; saved_judgements()
  re-derives the averages from them, no judge needed.
* AgenticLU: the card's form by default ("Question / Gold / Model / Is the model answer
  correct?"), correct when the reply starts with "yes", incorrect when it starts with "no"
  (case-insensitive, after stripping); any other reply is an unparseable judgement.
  `prompt_file` replaces the template (fields {question}, {gold}, {prediction}).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Sequence

from jaxeval.benchmarks.helmet.metrics import flatten_golds, parse_output
from jaxeval.benchmarks.helmet.tasks import ASSETS
from jaxeval.errors import ConfigError, DataError
from jaxeval.judges.base import with_reply_limit

JUDGE_PROMPTS = ASSETS / "judge_prompts"
AGENTICLU_DEFAULT_PROMPT = "Question: {question}\nGold: {gold}\nModel: {prediction}\nIs the model answer correct?"
JUDGE_BATCH = 16  # prompts per judge call: the progress bar and a signal's safe point move in these steps
LONGQA_JUDGE_MAX_TOKENS = 2048  # upstream's scripts/eval_gpt4_longqa.py; summaries keep the judge's 4096


def longqa_judge(judge):
    """The judge as the LongQA pass calls it: replies capped at upstream's 2,048 tokens."""
    return with_reply_limit(judge, LONGQA_JUDGE_MAX_TOKENS)


def read_prompt(path: str | Path) -> str:
    from jaxeval.io.inputs import read_text

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: judge prompt file not found")
    return read_text(path, ConfigError)


def last_json_object(text: str, fenced_fallback: bool = False) -> dict | None:
    """The last non-greedy {...} of `text` as JSON (None when it does not parse). fenced_fallback
    (the summarisation judge): when it does not parse, the last ```json ... ``` block instead."""
    candidates = re.findall(r"\{.*?\}", text, flags=re.DOTALL)
    if not candidates:
        return None
    try:
        value = json.loads(candidates[-1])
    except json.JSONDecodeError:
        if not fenced_fallback:
            return None
        fenced = re.findall(r"(?:```json)(.+)(?:```)", text, flags=re.DOTALL)
        try:
            value = json.loads(fenced[-1]) if fenced else None
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _numbers(reply, keys: Sequence[str], fenced_fallback: bool = False) -> tuple[dict | None, str | None]:
    """The numeric fields `keys` of the reply's last JSON object, or (None, why)."""
    if reply.text is None:
        return None, reply.error or "judge call failed"
    found = last_json_object(reply.text, fenced_fallback)
    if found is None:
        return None, "unparseable: no JSON object in the reply"
    try:
        return {k: float(found[k]) for k in keys}, None
    except (KeyError, TypeError, ValueError):
        return None, f"unparseable: JSON object lacks numeric {'/'.join(keys)}"


def _complete(judge, prompts: list[str], where: str = "judge") -> list:
    from jaxeval.interrupt import checkpoint
    from jaxeval.progress import progress

    replies = []
    with progress(desc=f"{where} judge", total=len(prompts), unit="prompt") as bar:
        for start in range(0, len(prompts), JUDGE_BATCH):
            checkpoint()
            batch = prompts[start:start + JUDGE_BATCH]
            got = judge.complete(batch)
            if len(got) != len(batch):
                raise ConfigError(f"the judge returned {len(got)} replies for {len(batch)} prompts")
            replies += got
            failed = sum(reply.text is None for reply in replies)
            bar.update(len(batch))
            if failed and hasattr(bar, "set_postfix_str"):
                bar.set_postfix_str(f"{failed} failed")
    return replies


def _field(item: dict, name: str, where: str):
    if name not in item:
        raise DataError(f"{where}: field '{name}' missing (needed by the judge)")
    return item[name]


def longqa_judgements(items: Sequence[dict], judge, where: str = "outputs") -> list[dict]:
    template = read_prompt(JUDGE_PROMPTS / "helmet_longqa_judge.txt")
    prompts = [template.format(question=_field(it, "question", f"{where} item {i}"),
                               # str.format of the gold itself, as upstream (a list shows as its repr)
                               correct_answers=_field(it, "answer", f"{where} item {i}"),
                               parsed_output=parse_output(_field(it, "output", f"{where} item {i}").replace("\n", " ")))
               for i, it in enumerate(items)]
    out = []
    for reply in _complete(longqa_judge(judge), prompts, where):
        values, error = _numbers(reply, ("fluency", "correctness"))
        out.append({"score": values["fluency"] * values["correctness"] if values else None, "error": error,
                    **(values or {})})
    return out


def _keypoints_text(keypoints: Sequence[str]) -> str:
    return "\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints))


def summ_judgements(items: Sequence[dict], judge, book: bool, where: str = "outputs") -> list[dict]:
    """book: the InfBench variants. Items need output, keypoints and expert_summary."""
    suffix = "infbench_book" if book else "multilexsum"
    templates = {kind: read_prompt(JUDGE_PROMPTS / f"helmet_summ_{kind}_{suffix}.txt")
                 for kind in ("fluency", "recall", "precision")}
    prompts = []
    for i, it in enumerate(items):
        summary = _field(it, "output", f"{where} item {i}").strip()
        keypoints = _field(it, "keypoints", f"{where} item {i}")
        expert = _field(it, "expert_summary", f"{where} item {i}")
        prompts += [templates["fluency"].format(text=summary),
                    templates["recall"].format(keypoints=_keypoints_text(keypoints), summary=summary),
                    templates["precision"].format(expert_summary=expert, summary=summary)]
    replies = _complete(judge, prompts, where)
    out = []
    for i, it in enumerate(items):
        fl, e1 = _numbers(replies[3 * i], ("fluency",), fenced_fallback=True)
        rc, e2 = _numbers(replies[3 * i + 1], ("recall",), fenced_fallback=True)
        pr, e3 = _numbers(replies[3 * i + 2], ("precision", "sentence_count"), fenced_fallback=True)
        error = e1 or e2 or e3
        if error is not None:
            out.append({"score": None, "error": error})
            continue
        out.append(summ_item_scores(fl["fluency"], rc["recall"], len(it["keypoints"]),
                                    pr["precision"], pr["sentence_count"]))
    return out


def _int_if_whole(value: float):
    return int(value) if float(value).is_integer() else value


def summ_item_scores(fluency, found, num_keypoints: int, supported, sentence_count) -> dict:
    """One summary's judgement, eval_gpt4_summ.py's arithmetic (zero counts give 0, not a failure)."""
    fluency, found, supported, sentence_count = (_int_if_whole(v) for v in (fluency, found, supported, sentence_count))
    rec = found / num_keypoints if num_keypoints > 0 else 0
    prec = supported / sentence_count if sentence_count > 0 else 0
    f1 = fluency * 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0
    return {"score": f1, "error": None, "fluency": fluency, "recall": rec, "precision": prec}


def saved_judgements(family_name: str, items: Sequence[dict]) -> list[dict] | None:
    """Judgements from HELMET's saved "gpt-4-scores" (None when no item carries the field).
    LongQA: {fluency, correctness} -> fluency x correctness; summarisation: its f1 / recall /
    precision / fluency. An item whose field is None or absent was not judged upstream."""
    if not any("gpt-4-scores" in it for it in items):
        # jaxeval's own results keep each judgement under "judge"
        if items and all(isinstance(it.get("judge"), dict) and "score" in it["judge"] for it in items):
            return [dict(it["judge"]) for it in items]
        return None
    out = []
    for it in items:
        saved = it.get("gpt-4-scores")
        if not isinstance(saved, dict):
            out.append({"score": None, "error": "not judged: no saved gpt-4-scores"})
        elif family_name == "narrativeqa":
            out.append({"score": saved["fluency"] * saved["correctness"], "error": None,
                        "fluency": saved["fluency"], "correctness": saved["correctness"]})
        else:
            out.append({"score": saved["f1"], "error": None, "fluency": saved["fluency"],
                        "recall": saved["recall"], "precision": saved["precision"]})
    return out


def longqa_summary(judgements: Sequence[dict]) -> tuple[dict, dict]:
    """({"gpt4_score": summary}, upstream averages {"gpt-4-score": mean 0-3}): the mean is
    eval_gpt4_longqa's sum / count, the headline collect_results' mean * (100/3)."""
    scored = [j["score"] for j in judgements if j["score"] is not None]
    summary = summarize_judgements(judgements)
    raw = None
    if scored:
        total = 0
        for value in scored:
            total += value
        raw = total / len(scored)
    summary["score"] = raw * (100 / 3) if raw is not None else None
    return {"gpt4_score": summary}, ({"gpt-4-score": raw} if raw is not None else {})


def summ_summary(judgements: Sequence[dict]) -> tuple[dict, dict]:
    """({"gpt4_f1": summary}, upstream averages gpt-4-recall/-precision/-fluency/-f1 (fractions));
    the headline is numpy's mean of f1 x 100, as eval_gpt4_summ + collect_results."""
    import numpy as np

    judged = [j for j in judgements if j["score"] is not None]
    summary = summarize_judgements(judgements)
    raw = {}
    if judged:
        for name in ("recall", "precision", "fluency"):
            raw[f"gpt-4-{name}"] = float(np.mean([j[name] for j in judged]))
        raw["gpt-4-f1"] = float(np.mean([j["score"] for j in judged]))
        summary["score"] = raw["gpt-4-f1"] * 100
    return {"gpt4_f1": summary}, raw


def gold_text(answer) -> str:
    """How a gold reaches the AgenticLU judge: one gold as is, several as their Python list repr;
    an InfBench-MC gold [letter, "letter. option"] as its long form."""
    if isinstance(answer, str):
        return answer
    golds = flatten_golds(answer)
    if len(golds) == 2 and len(golds[0]) == 1 and golds[1].startswith(golds[0] + ". "):
        return golds[1]
    return golds[0] if len(golds) == 1 else repr(golds)


def agenticlu_judgements(items: Sequence[dict], judge, prompt_file: str | Path | None = None,
                         where: str = "outputs") -> list[dict]:
    template = read_prompt(prompt_file) if prompt_file else AGENTICLU_DEFAULT_PROMPT
    prompts = [template.format(question=_field(it, "question", f"{where} item {i}"),
                               gold=gold_text(_field(it, "answer", f"{where} item {i}")),
                               prediction=it.get("parsed_output") if isinstance(it.get("parsed_output"), str)
                               else parse_output(_field(it, "output", f"{where} item {i}")))
               for i, it in enumerate(items)]
    out = []
    for reply in _complete(judge, prompts, where):
        if reply.text is None:
            out.append({"score": None, "error": reply.error or "judge call failed"})
            continue
        verdict = reply.text.strip().lower()
        if verdict.startswith("yes"):
            out.append({"score": 1.0, "error": None})
        elif verdict.startswith("no"):
            out.append({"score": 0.0, "error": None})
        else:
            out.append({"score": None, "error": "unparseable: reply starts with neither yes nor no"})
    return out


def summarize_judgements(judgements: Sequence[dict], multiplier: float = 100, divisor: float = 1) -> dict:
    """mean * multiplier / divisor over the judged items (LongQA: x 100 / 3, as collect_results),
    with the failures counted and their reasons."""
    import numpy as np

    scored = [j["score"] for j in judgements if j["score"] is not None]
    reasons = Counter(j["error"].split(":")[0] if j["error"] else "" for j in judgements if j["score"] is None)
    score = float(np.mean(scored)) * multiplier / divisor if scored else None
    return {"score": score, "judged": len(scored),
            "failed": len(judgements) - len(scored), "failure_reasons": dict(reasons)}
