"""pred.py's prompts, middle cut and answer extraction (THUDM/LongBench at 2e00731, pred.py and prompts/).

- Templates are filled by successive str.replace in pred.py's order ($DOC$ with the stripped
  context, then $Q$, $C_A$ ... $C_D$ with stripped fields, then $COT$): a context holding "$Q$" has
  it replaced too, as in the original.
- The cut: the prompt encoded with the tokenizer's default special tokens; over max_len tokens it
  keeps ids[:max_len//2] + ids[-max_len//2:] (Python reads -max_len//2 as (-max_len)//2, so the
  tail is the larger half for an odd max_len), decoded together with special tokens skipped.
- extract_answer: every "*" removed, then the first "The correct answer is (X)", else the first
  "The correct answer is X" (X in A-D, case-sensitive), else None.
"""

from __future__ import annotations

import re

from jaxeval.generation import cut_middle, encode

_QUESTION = ("What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n(C) $C_C$\n"
             "(D) $C_D$\n\n")
TEMPLATES = {
    "0shot": ("Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n\n"
              + _QUESTION + 'Format your response as follows: "The correct answer is (insert answer here)".'),
    "0shot_cot": ("Please read the following text and answer the questions below.\n\n<text>\n$DOC$\n</text>\n\n"
                  + _QUESTION + "Let\u2019s think step by step:"),
    "0shot_cot_ans": ("Please read the following text and answer the questions below.\n\n"
                      "The text is too long and omitted here.\n\n" + _QUESTION
                      + "Let\u2019s think step by step: $COT$\n\nBased on the above, what is the single, most likely "
                        'answer choice? Format your response as follows: "The correct answer is (insert answer here)".'),
}
MAX_NEW_TOKENS = {"0shot": 128, "0shot_cot": 1024, "0shot_cot_ans": 128}
TEMPERATURE = 0.1
OFFICIAL_MAX_LEN = 120_000  # config/model2maxlen.json for every 128k model
LETTERS = ("A", "B", "C", "D")
LOGLIK_ANSWER_PREFIX = "The correct answer is ("  # the loglik variant's assistant text before the letter


def fill(template: str, item: dict, cot: str | None = None) -> str:
    prompt = template.replace("$DOC$", item["context"].strip()).replace("$Q$", item["question"].strip())
    for letter in LETTERS:
        prompt = prompt.replace(f"$C_{letter}$", item[f"choice_{letter}"].strip())
    return prompt if cot is None else prompt.replace("$COT$", cot)


def truncate(prompt: str, tokenizer, max_len: int) -> tuple[str, int, bool]:
    """(the prompt as pred.py's query_llm cuts it, its tokens before the cut, whether it was cut)."""
    ids = encode(tokenizer, prompt, add_special_tokens=True)
    if len(ids) <= max_len:
        return prompt, len(ids), False
    return cut_middle(tokenizer, ids, max_len // 2, -((-max_len) // 2), decode_apart=False), len(ids), True


def extract_answer(response: str) -> str | None:
    response = response.replace("*", "")
    match = re.search(r"The correct answer is \(([A-D])\)", response)
    if match:
        return match.group(1)
    match = re.search(r"The correct answer is ([A-D])", response)
    return match.group(1) if match else None
