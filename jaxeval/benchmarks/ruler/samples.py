"""RULER samples for one (task, length): the prompt template as prepare.py builds it, the task's
generator, the answer-prefix split, the official validation.jsonl fields, and the on-disk cache
keyed by tokenizer hash, task, length and seed (plus the template and input files' hashes).

Generated samples are a prefix-stable sequence: the first N of a 500-sample file are the N a
100-sample run would write (every draw before sample N is the same), so a cache holding more
samples than asked serves any smaller count."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

from jaxeval.benchmarks.ruler import inputs
from jaxeval.benchmarks.ruler.fitting import fit_and_draw
from jaxeval.benchmarks.ruler.tasks import GENERATORS, MODEL_TEMPLATES, TASKS, generator_of
from jaxeval.errors import ConfigError, DataError

GENERATOR_VERSION = "1"  # bump when a generated sample changes
SENTINEL = "\u0000RULER_TASK_TEMPLATE\u0000"


def default_cache_dir() -> Path:
    value = os.environ.get("JAXEVAL_RULER_CACHE")
    return Path(value).expanduser() if value else Path.home() / ".cache" / "jaxeval" / "ruler"


def tokenizer_hash(tokenizer) -> str:
    """sha256 of what decides token counts: the fast tokenizer's serialised state (else its
    vocabulary) and its added tokens."""
    h = hashlib.sha256()
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        h.update(backend.to_str().encode("utf-8"))
    else:
        h.update(json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=True).encode("utf-8"))
    h.update(json.dumps(sorted(map(str, getattr(tokenizer, "all_special_tokens", ())))).encode("utf-8"))
    return h.hexdigest()


def resolve_template(choice: str, tokenizer) -> tuple[str, str]:
    """(template name, model template with {task_template}) for --ruler_template. auto: the
    tokenizer's chat template when it has one (RULER wraps chat models in theirs), else base;
    chat: the tokenizer's, rendered around the task text with the assistant turn opened."""
    from jaxeval.generation import chat_text, has_chat_template, user_turn

    if choice == "auto":
        choice = "chat" if has_chat_template(tokenizer) else "base"
    if choice != "chat":
        return choice, MODEL_TEMPLATES[choice]
    rendered = chat_text(tokenizer, user_turn(SENTINEL))
    if rendered.count(SENTINEL) != 1:
        raise ConfigError("the tokenizer's chat template does not place the user message once; "
                          "pass --ruler_template base or a RULER template name")
    head, tail = rendered.split(SENTINEL)
    escape = lambda s: s.replace("{", "{{").replace("}", "}}")  # noqa: E731 - the generators .format it
    return "chat", escape(head) + "{task_template}" + escape(tail)


def full_template(model_template: str, task: str) -> str:
    """prepare.py: Templates[type].format(task_template=template) + answer_prefix, by replace so a
    chat template's own (escaped) braces are left for the generator's format."""
    gen = generator_of(task)
    return model_template.replace("{task_template}", gen.template) + gen.answer_prefix


@dataclasses.dataclass(frozen=True)
class SampleSpec:
    task: str
    length: int
    seed: int
    template_name: str
    model_template: str
    files: dict  # essay / squad / hotpotqa -> path; english_words -> path or None

    def key(self, tokenizer_digest: str) -> str:
        h = hashlib.sha256(json.dumps({
            "version": GENERATOR_VERSION, "template": self.model_template,
            "files": {k: (inputs.sha256_file(Path(v)) if v else None) for k, v in sorted(self.files.items())},
        }, sort_keys=True).encode("utf-8")).hexdigest()[:16]
        return f"{tokenizer_digest[:16]}/{self.task}/{self.length}-seed{self.seed}-{h}.jsonl"


def _generate(spec: SampleSpec, tokenizer, count: int) -> tuple[int, list[tuple], str | None]:
    from jaxeval.benchmarks.ruler.niah import Niah
    from jaxeval.benchmarks.ruler.qa import QA
    from jaxeval.benchmarks.ruler.variable_tracking import VariableTracking
    from jaxeval.benchmarks.ruler.word_counts import CommonWords, FrequentWords

    kind, args = TASKS[spec.task]
    gen = GENERATORS[kind]
    template = full_template(spec.model_template, spec.task)
    tokens = lambda text: len(tokenizer.tokenize(text))  # noqa: E731 - HFTokenizer.text_to_tokens: no special tokens
    common = (args, template, tokens, spec.length, gen.tokens_to_generate, spec.seed)
    what = f"{spec.task} at {spec.length}"
    if kind == "freq_words_extraction":
        return FrequentWords(*common).samples(count)
    if kind == "niah":
        fit = Niah(*common, spec.files.get("essay")).fit()
    elif kind == "variable_tracking":
        vt = VariableTracking(*common)
        fit = vt.fit(vt.icl_example())
    elif kind == "common_words_extraction":
        fit = CommonWords(*common, spec.files.get("english_words")).fit()
    else:
        fit = QA(*common, spec.files).fit()
    return fit_and_draw(fit, spec.length, count, what)


def official_records(spec: SampleSpec, tokenizer, count: int) -> tuple[int, list[dict], str | None]:
    """(haystack size, validation.jsonl rows, why fewer than count or None) as RULER's generator
    writes them (it never finishes where a sample cannot fit: the rows before that one)."""
    kind, _ = TASKS[spec.task]
    prefix_head = GENERATORS[kind].answer_prefix[:10]
    size, drawn, stuck = _generate(spec, tokenizer, count)
    rows = []
    for index, (text, answers, _, length) in enumerate(drawn):
        cut = text.rfind(prefix_head)
        row = {"index": index, "input": text[:cut], "outputs": answers, "length": length,
               "length_w_model_temp": length, "answer_prefix": text[cut:]}
        if kind == "niah":  # `index` is the answer's character offset there (RULER overwrites the loop variable)
            offset = row["input"].find(answers[0])
            row = {"index": offset, **{k: v for k, v in row.items() if k != "index"},
                   "token_position_answer": len(tokenizer.tokenize(row["input"][:offset]))}
        rows.append(row)
    return size, rows, stuck


def question_count(spec: SampleSpec) -> int | None:
    """How many questions a QA task's file holds (RULER loops forever past them); None otherwise."""
    kind, args = TASKS[spec.task]
    if kind != "qa":
        return None
    reader = inputs.squad if args["dataset"] == "squad" else inputs.hotpotqa
    return len(reader(spec.files[args["dataset"]])[0])


def load_or_generate(spec: SampleSpec, tokenizer, count: int, cache_dir: Path | None) -> tuple[list[dict], dict]:
    """The first `count` samples (fewer where one cannot fit) and {"cache": hit|generated|off,
    "path", "haystack_size", "stuck": why fewer or None}."""
    from jaxeval.io.fs import write_text_atomic

    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / spec.key(tokenizer_hash(tokenizer))
        if path.is_file():
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
                header, rows = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
            except (OSError, UnicodeDecodeError, json.JSONDecodeError, IndexError):
                header, rows = None, []  # a damaged cache entry is regenerated
            if header is not None and (len(rows) >= count or header.get("stuck")):
                stuck = header.get("stuck") if len(rows) < count else None
                return rows[:count], {"cache": "hit", "path": str(path), "haystack_size": header["haystack_size"],
                                      "stuck": stuck}
    size, rows, stuck = official_records(spec, tokenizer, count)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            header = {"task": spec.task, "length": spec.length, "seed": spec.seed, "haystack_size": size,
                      "template": spec.template_name, "stuck": stuck}
            write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in [header, *rows]))
        except OSError as e:
            raise DataError(f"--ruler_cache_dir {cache_dir}: cannot write the sample cache ({e.strerror})") from None
    return rows, {"cache": "generated" if path else "off", "path": str(path) if path else None, "haystack_size": size,
                  "stuck": stuck}
