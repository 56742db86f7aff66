"""Model-judged scores on saved outputs: HELMET's LongQA and summarisation judges, AgenticLU's
binary correctness judge. Prompts are data files (jaxeval/assets/helmet_data), formatted with
str.format; the judge is anything with the Judge interface of jaxeval.judges.base
(complete(prompts) -> replies with .text / .error, settings()).

Every judgement is {"score": float | None, "error": str | None}. A failed call or an
unparseable reply gives score None and its reason: it is counted and reported by
summarize_judgements and left out of the mean, never scored 0.

* LongQA (NarrativeQA): question, the Python repr of the gold list, and parse_output of the
  output with newlines made spaces. The last {...} of the reply must hold fluency and
  correctness; score = fluency x correctness (0-3). collect_results reports mean x 100/3.
* Summarisation: three prompts per item (fluency, recall over numbered keypoints, precision
  against the expert summary; "book" variants for InfBench). R = recall / #keypoints,
  P = precision / sentence_count, score = fluency x 2PR/(P+R) (0 when P+R = 0); an item
  counts only when all three replies parse. Reported mean x 100.
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

JUDGE_PROMPTS = ASSETS / "judge_prompts"
AGENTICLU_DEFAULT_PROMPT = "Question: {question}\nGold: {gold}\nModel: {prediction}\nIs the model answer correct?"
JUDGE_BATCH = 64


def read_prompt(path: str | Path) -> str:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: judge prompt file not found")
    return path.read_text()


def last_json_object(text: str) -> dict | None:
    for candidate in reversed(re.findall(r"\{.*?\}", text, flags=re.DOTALL)):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _numbers(reply, keys: Sequence[str]) -> tuple[dict | None, str | None]:
    """The numeric fields `keys` of the reply's last JSON object, or (None, why)."""
    if reply.text is None:
        return None, reply.error or "judge call failed"
    found = last_json_object(reply.text)
    if found is None:
        return None, "unparseable: no JSON object in the reply"
    try:
        return {k: float(found[k]) for k in keys}, None
    except (KeyError, TypeError, ValueError):
        return None, f"unparseable: JSON object lacks numeric {'/'.join(keys)}"


def _complete(judge, prompts: list[str]) -> list:
    replies = []
    for start in range(0, len(prompts), JUDGE_BATCH):
        batch = prompts[start:start + JUDGE_BATCH]
        got = judge.complete(batch)
        if len(got) != len(batch):
            raise ConfigError(f"the judge returned {len(got)} replies for {len(batch)} prompts")
        replies += got
    return replies


def _field(item: dict, name: str, where: str):
    if name not in item:
        raise DataError(f"{where}: field '{name}' missing (needed by the judge)")
    return item[name]


def longqa_judgements(items: Sequence[dict], judge, where: str = "outputs") -> list[dict]:
    template = read_prompt(JUDGE_PROMPTS / "helmet_longqa_judge.txt")
    prompts = [template.format(question=_field(it, "question", f"{where} item {i}"),
                               correct_answers=repr(_field(it, "answer", f"{where} item {i}")),
                               parsed_output=parse_output(_field(it, "output", f"{where} item {i}").replace("\n", " ")))
               for i, it in enumerate(items)]
    out = []
    for reply in _complete(judge, prompts):
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
    replies = _complete(judge, prompts)
    out = []
    for i, it in enumerate(items):
        fl, e1 = _numbers(replies[3 * i], ("fluency",))
        rc, e2 = _numbers(replies[3 * i + 1], ("recall",))
        pr, e3 = _numbers(replies[3 * i + 2], ("precision", "sentence_count"))
        error = e1 or e2 or e3
        if error is None and (pr["sentence_count"] <= 0 or not it["keypoints"]):
            error = "unparseable: sentence_count or keypoint count is 0"
        if error is not None:
            out.append({"score": None, "error": error})
            continue
        r = rc["recall"] / len(it["keypoints"])
        p = pr["precision"] / pr["sentence_count"]
        f1 = 2 * p * r / (p + r) if p + r > 0 else 0.0
        out.append({"score": fl["fluency"] * f1, "error": None, "fluency": fl["fluency"], "recall": r, "precision": p})
    return out


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
    for reply in _complete(judge, prompts):
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
