"""HELMET in `jaxeval plan` without its data (Benchmark.planned_units): the configs' counts and lengths."""

from __future__ import annotations

from pathlib import Path

from jaxeval.benchmarks.base import PlannedTask, PlannedUnit
from jaxeval.benchmarks.helmet.tasks import HUB_ID, family


def planned_units(settings, units, agenticlu: bool, tokenizer, reply_tokens: int):
    """HELMET without its data (`jaxeval plan`): each config unit's max_test_samples items (the
    configs' cap; every released set holds at least that many), each prompt filling the unit's
    input_max_length less its generation budget, and the LLM judge's prompts (LongQA one per item,
    summarisation three) as their templates plus the output budget. None when the data is here."""
    if settings.data is None or (settings.data != HUB_ID and Path(settings.data).exists()):
        return None
    judge_prompts = _judge_prompt_tokens(tokenizer) if settings.judge else {}
    from jaxeval.benchmarks.helmet.judging import LONGQA_JUDGE_MAX_TOKENS

    task = "helmet_agenticlu" if agenticlu else "helmet"
    planned = []
    for unit in units:
        gen = settings.agenticlu_generation_max_length if agenticlu else unit.generation_max_length
        fam = family(unit.dataset)
        judged = judge_prompts.get("agenticlu" if agenticlu and fam in ("rag", "narrativeqa", "infbench_qa_eng",
                                                                         "infbench_choice_eng") else fam, ())
        planned.append(PlannedUnit(f"{task}/{unit.dataset}/{unit.length}", int(unit.max_test_samples or 100),
                                   unit.input_max_length - gen, gen, tuple(t + gen for t in judged),
                                   min(reply_tokens, LONGQA_JUDGE_MAX_TOKENS) if fam == "narrativeqa" and not agenticlu
                                   else reply_tokens))
    return PlannedTask(tuple(planned), "HELMET's configs: max_test_samples items per dataset and length, prompts "
                                       "at input_max_length less the generation budget; ALCE's NLI calls not counted")


def _judge_prompt_tokens(tokenizer) -> dict[str, tuple[int, ...]]:
    """family -> the tokens of each judge template one item sends (outputs added by the caller)."""
    from jaxeval.benchmarks.helmet.judging import AGENTICLU_DEFAULT_PROMPT, JUDGE_PROMPTS, read_prompt

    def tokens(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) if tokenizer else len(text) // 4

    def summ(suffix: str) -> tuple[int, ...]:
        return tuple(tokens(read_prompt(JUDGE_PROMPTS / f"helmet_summ_{kind}_{suffix}.txt"))
                     for kind in ("fluency", "recall", "precision"))

    return {"narrativeqa": (tokens(read_prompt(JUDGE_PROMPTS / "helmet_longqa_judge.txt")),),
            "infbench_sum_eng": summ("infbench_book"), "multi_lexsum": summ("multilexsum"),
            "agenticlu": (tokens(AGENTICLU_DEFAULT_PROMPT),)}
