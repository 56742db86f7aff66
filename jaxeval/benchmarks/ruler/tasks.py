"""RULER's 13 tasks as the paper runs them: NVIDIA/RULER scripts/synthetic.yaml (arguments),
scripts/data/synthetic/constants.py (templates, answer prefixes, tokens to generate),
scripts/eval/synthetic/constants.py (metrics) and scripts/data/template.py (model templates),
at commit c3f5e3b (docs/provenance.md#ruler)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from jaxeval.errors import ConfigError

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "ruler"
RULER_COMMIT = "c3f5e3b4f87f97e048793bb510a3a6b19a46bf3a"
THRESHOLD = 85.6  # the paper's effective-length threshold: Llama-2-7B's average at 4k
DEFAULT_SEED = 42  # prepare.py: random_seed 42 + chunk_idx, one chunk
DEFAULT_SAMPLES = 500  # prepare.py --num_samples default, as run.sh uses it
PAPER_LENGTHS = (4096, 8192, 16384, 32768, 65536, 131072)


@dataclasses.dataclass(frozen=True)
class Generator:
    name: str  # synthetic.yaml `task:`
    tokens_to_generate: int
    template: str
    answer_prefix: str
    metric: str  # string_match_all / string_match_part


GENERATORS = {
    "niah": Generator(
        "niah", 128,
        "Some special magic {type_needle_v} are hidden within the following text. Make sure to memorize it. "
        "I will quiz you about the {type_needle_v} afterwards.\n{context}\nWhat are all the special magic "
        "{type_needle_v} for {query} mentioned in the provided text?",
        " The special magic {type_needle_v} for {query} mentioned in the provided text are", "string_match_all"),
    "variable_tracking": Generator(
        "variable_tracking", 30,
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n{context}\n"
        "Question: Find all variables that are assigned the value {query} in the text above.",
        " Answer: According to the chain(s) of variable assignment in the text above, {num_v} variables are "
        "assigned the value {query}, they are: ", "string_match_all"),
    "common_words_extraction": Generator(
        "common_words_extraction", 120,
        "Below is a numbered list of words. In these words, some appear more often than others. Memorize the "
        "ones that appear most often.\n{context}\nQuestion: What are the 10 most common words in the above list?",
        " Answer: The top 10 words that appear most often in the list are:", "string_match_all"),
    "freq_words_extraction": Generator(
        "freq_words_extraction", 50,
        "Read the following coded text and track the frequency of each coded word. Find the three most "
        "frequently appeared coded words. {context}\nQuestion: Do not provide any explanation. Please ignore "
        "the dots '....'. What are the three most frequently appeared words in the above coded text?",
        " Answer: According to the coded text above, the three most frequently appeared words are:",
        "string_match_all"),
    "qa": Generator(
        "qa", 32,
        "Answer the question based on the given documents. Only give me the answer and do not output any other "
        "words.\n\nThe following are given documents.\n\n{context}\n\nAnswer the question based on the given "
        "documents. Only give me the answer and do not output any other words.\n\nQuestion: {query}",
        " Answer:", "string_match_part"),
}


def _niah(haystack, key, value, k=1, v=1, q=1):
    return ("niah", {"type_haystack": haystack, "type_needle_k": key, "type_needle_v": value,
                     "num_needle_k": k, "num_needle_v": v, "num_needle_q": q})


TASKS: dict[str, tuple[str, dict]] = {  # synthetic.yaml, in its order
    "niah_single_1": _niah("noise", "words", "numbers"),
    "niah_single_2": _niah("essay", "words", "numbers"),
    "niah_single_3": _niah("essay", "words", "uuids"),
    "niah_multikey_1": _niah("essay", "words", "numbers", k=4),
    "niah_multikey_2": _niah("needle", "words", "numbers"),
    "niah_multikey_3": _niah("needle", "uuids", "uuids"),
    "niah_multivalue": _niah("essay", "words", "numbers", v=4),
    "niah_multiquery": _niah("essay", "words", "numbers", q=4),
    "vt": ("variable_tracking", {"type_haystack": "noise", "num_chains": 1, "num_hops": 4}),
    "cwe": ("common_words_extraction", {"freq_cw": 30, "freq_ucw": 3, "num_cw": 10}),
    "fwe": ("freq_words_extraction", {"alpha": 2.0}),
    "qa_1": ("qa", {"dataset": "squad"}),
    "qa_2": ("qa", {"dataset": "hotpotqa"}),
}

# scripts/data/template.py: `base` and the named chat wrappers RULER ships
MODEL_TEMPLATES = {
    "base": "{task_template}",
    "meta-chat": "[INST] {task_template} [/INST]",
    "vicuna-chat": "A chat between a curious user and an artificial intelligence assistant. The assistant gives "
                   "helpful, detailed, and polite answers to the user's questions. USER: {task_template} ASSISTANT:",
    "lwm-chat": "You are a helpful assistant. USER: {task_template} ASSISTANT: ",
    "command-r-chat": "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|USER_TOKEN|>{task_template}<|END_OF_TURN_TOKEN|>"
                      "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    "chatglm-chat": "[gMASK]sop<|user|> \n {task_template}<|assistant|> \n ",
    "RWKV": "User: hi\n\nAssistant: Hi. I am your assistant and I will provide expert full response in full "
            "details. Please feel free to ask any question and I will always answer it\n\nUser: {task_template}"
            "\n\nAssistant:",
    "Phi3": "<|user|>\n{task_template}<|end|>\n<|assistant|>\n",
    "meta-llama3": "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n{task_template}<|eot_id|>"
                   "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "jamba": "<|startoftext|><|bom|><|system|> <|eom|><|bom|><|user|> {task_template}<|eom|><|bom|><|assistant|>",
    "nemotron5-instruct": "<SPECIAL_10>System\n\n<SPECIAL_11>User\n{task_template}\n<SPECIAL_11>Assistant\n",
}
TEMPLATE_CHOICES = ("auto", "chat", *MODEL_TEMPLATES)


def generator_of(task: str) -> Generator:
    return GENERATORS[TASKS[task][0]]


def parse_tasks(text: str | None) -> list[str]:
    """--ruler_subtasks: comma-separated task names (default: all 13, in synthetic.yaml's order)."""
    if not text:
        return list(TASKS)
    chosen = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in TASKS]
    if unknown or not chosen:
        raise ConfigError(f"--ruler_subtasks: unknown RULER task {', '.join(unknown) or '(none given)'}; "
                          f"known: {', '.join(TASKS)}")
    return list(dict.fromkeys(chosen))


def parse_lengths(text: str | None) -> list[int]:
    """--ruler_lengths: comma-separated token counts, "4096,131072" or "4k,128k" (k = 1024)."""
    if not text:
        return [4096]
    lengths = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        try:
            value = int(part[:-1]) * 1024 if part.endswith("k") else (
                int(part[:-1]) * 1024 * 1024 if part.endswith("m") else int(part))
        except ValueError:
            raise ConfigError(f"--ruler_lengths: {part!r} is not a token count (e.g. 4096, 128k)") from None
        if value < 256:
            raise ConfigError(f"--ruler_lengths: {value} is too short for RULER (at least 256 tokens)")
        lengths.append(value)
    if not lengths:
        raise ConfigError("--ruler_lengths: no length given")
    return sorted(set(lengths))
