"""The one generation path of the benchmarks and the local judge: tokenizer checks, chat
templates, middle cuts, batched calls of a LanguageModel (jaxeval.engine.backend) and the
checks on what comes back.

Each benchmark keeps its official quirks in its own module (which tokens a cut keeps, whether
halves are decoded apart, which datasets skip the template); the operations themselves live
here once.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Sequence

from jaxeval.errors import ConfigError, JaxevalError


def require_tokenizer(backend, needed_by: str):
    """The backend's tokenizer; a ConfigError naming the model when it has none."""
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None:
        raise ConfigError(f"{getattr(backend, 'path', 'the model')}: the model folder has no tokenizer; "
                          f"{needed_by} needs one")
    return tokenizer


def encode(tokenizer, text: str, add_special_tokens: bool = True) -> list[int]:
    """Token ids of `text`, never truncated by the tokenizer itself."""
    return list(tokenizer(text, add_special_tokens=add_special_tokens, truncation=False)["input_ids"])


def has_chat_template(tokenizer) -> bool:
    return tokenizer is not None and bool(getattr(tokenizer, "chat_template", None))


def resolve_chat_format(chat_format: str, tokenizer, formats: Sequence[str] = ("auto", "model", "none")) -> str:
    """The concrete chat format for this tokenizer: "auto" is "model" (its chat template) where it
    has one, else "none" (the raw prompt); "model" without a template and a name not in `formats`
    (a benchmark's own wrappers added to the three) are errors."""
    if chat_format not in formats:
        raise ConfigError(f"unknown chat_format '{chat_format}'; available: {', '.join(formats)}")
    has_template = has_chat_template(tokenizer)
    if chat_format == "auto":
        return "model" if has_template else "none"
    if chat_format == "model" and not has_template:
        raise ConfigError("chat_format 'model': the tokenizer has no chat template; "
                          "use chat_format 'none' for a base model")
    return chat_format


def chat_text(tokenizer, messages: list[dict], **template_args) -> str:
    """The messages rendered by the tokenizer's chat template, with the assistant turn opened.
    template_args go to the template (enable_thinking=...)."""
    if tokenizer is None:
        raise ConfigError("this model has no tokenizer, so chat messages cannot be turned into tokens")
    if not has_chat_template(tokenizer):
        raise ConfigError(f"tokenizer {getattr(tokenizer, 'name_or_path', '')!r} has no chat template "
                          "(tokenizer_config.json 'chat_template' or chat_template.jinja)")
    try:
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **template_args)
    except Exception as e:  # the template is the model folder's Jinja code: any error is the file's
        raise ConfigError(f"the chat template of {getattr(tokenizer, 'name_or_path', '') or 'the tokenizer'} "
                          f"(tokenizer_config.json 'chat_template' or chat_template.jinja) cannot render a "
                          f"user turn: {type(e).__name__}: {' '.join(str(e).split())[:200]}") from None


def check_chat_template(tokenizer) -> None:
    """A chat template, when the tokenizer has one, renders a user turn (validate and run check it
    before the first prompt needs it)."""
    if has_chat_template(tokenizer):
        chat_text(tokenizer, user_turn("Hello."))


def chat_prompt_ids(tokenizer, messages: list[dict], **template_args) -> list[int]:
    """chat_text tokenized; the template writes any BOS itself, so no special tokens are added."""
    return encode(tokenizer, chat_text(tokenizer, messages, **template_args), add_special_tokens=False)


def user_turn(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def cut_middle(tokenizer, ids: Sequence[int], head: int, tail: int, decode_apart: bool) -> str:
    """The text of ids[:head] and ids[-tail:] with the middle left out, special tokens skipped:
    the halves decoded apart and joined (LongBench's pred.py) or decoded together (LongBench Pro)."""
    first, last = list(ids[:head]), list(ids[len(ids) - tail:])
    if decode_apart:
        return tokenizer.decode(first, skip_special_tokens=True) + tokenizer.decode(last, skip_special_tokens=True)
    return tokenizer.decode(first + last, skip_special_tokens=True)


@dataclasses.dataclass(frozen=True)
class GenerationOptions:
    """What one generate call asks for (LanguageModel.generate, jaxeval.engine.backend)."""

    max_new_tokens: int
    stop: tuple[str, ...] | None = None
    stop_token_ids: tuple[int, ...] | None = None
    min_new_tokens: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class GenKwargs:
    """`--gen_kwargs` (lm-eval's names): settings that replace a benchmark's own in every generation
    of its run (jaxeval.run.config.parse_gen_kwargs reads them). None: the benchmark's."""

    temperature: float | None = None
    top_p: float | None = None
    do_sample: bool | None = None  # False: greedy; True with temperature 0: temperature 1 (transformers' default)
    max_new_tokens: int | None = None  # lm-eval's max_gen_toks; replaces the per-dataset budget
    until: tuple[str, ...] | None = None  # stop strings, in place of the benchmark's

    def recorded(self) -> dict:
        """The settings given, by name (results config; hashed into the run)."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in dataclasses.asdict(self).items() if value is not None}

    def apply(self, options: GenerationOptions) -> GenerationOptions:
        changes: dict = {}
        if self.max_new_tokens is not None:
            changes.update(max_new_tokens=self.max_new_tokens,
                           min_new_tokens=min(options.min_new_tokens, self.max_new_tokens))
        if self.until is not None:
            changes["stop"] = self.until or None
        if self.temperature is not None:
            changes["temperature"] = self.temperature
        if self.top_p is not None:
            changes["top_p"] = self.top_p
        if self.do_sample is False:
            changes["temperature"] = 0.0
        elif self.do_sample and changes.get("temperature", options.temperature) == 0.0:
            changes["temperature"] = 1.0
        return dataclasses.replace(options, **changes)

    def deviation(self) -> str:
        given = ", ".join(f"{name}={value!r}" for name, value in self.recorded().items())
        budget = " (max_new_tokens replaces the benchmark's per-dataset budget)" if self.max_new_tokens else ""
        return f"--gen_kwargs {given}: in place of the benchmark's own generation settings{budget}"


@dataclasses.dataclass
class _Overriding:
    gen_kwargs: GenKwargs
    calls: int = 0  # generate() calls it changed


_OVERRIDES: contextvars.ContextVar[_Overriding | None] = contextvars.ContextVar("jaxeval_gen_kwargs", default=None)


@contextlib.contextmanager
def overriding(gen_kwargs: GenKwargs | None):
    """Within: every generate() call (judges' excepted) runs with gen_kwargs applied; yields the
    state, whose .calls says whether anything generated (None: nothing to apply)."""
    if gen_kwargs is None or not gen_kwargs.recorded():
        yield None
        return
    state = _Overriding(gen_kwargs)
    token = _OVERRIDES.set(state)
    try:
        yield state
    finally:
        _OVERRIDES.reset(token)


def note_overriding(summary: dict | None, state: _Overriding | None) -> dict | None:
    """A task's summary with the --gen_kwargs deviation added where they changed a generation."""
    if summary is None or state is None or not state.calls:
        return summary
    return {**summary, "deviations": [*summary.get("deviations", []), state.gen_kwargs.deviation()]}


def generate(backend, prompts: Sequence[Sequence[int]], options: GenerationOptions, *, batch_size: int = 8,
             what: str = "the backend", judge: bool = False) -> list:
    """One generation per prompt, in order, from backend.generate (batch_size prompts per engine
    batch); an answer of another length is a JaxevalError naming `what`. Inside overriding(), the
    run's --gen_kwargs replace the options' settings, except for a judge (judge=True)."""
    if not prompts:
        return []
    active = None if judge else _OVERRIDES.get()
    if active is not None:
        options = active.gen_kwargs.apply(options)
        active.calls += 1
    outputs = backend.generate([list(p) for p in prompts], options.max_new_tokens,
                               list(options.stop) if options.stop else None, options.temperature, options.top_p,
                               options.seed, stop_token_ids=list(options.stop_token_ids or ()) or None,
                               min_new_tokens=options.min_new_tokens, batch_size=batch_size)
    if len(outputs) != len(prompts):
        raise JaxevalError(f"{what} returned {len(outputs)} generations for {len(prompts)} prompts")
    return list(outputs)


def bucket_order(prompt_lengths: Sequence[int], max_new_tokens: int) -> list[int]:
    """Prompt indices, the prompts of one length bucket (jaxeval.engine.buckets.generation_bucket)
    together, longest first: a runner's fixed journal batches in this order fill the engine's
    batches (which never mix buckets) instead of splitting them."""
    from jaxeval.engine.buckets import generation_batches

    return [i for batch in generation_batches(list(prompt_lengths), max_new_tokens, max(1, len(prompt_lengths)))
            for i in batch]


def decoded(tokenizer, output) -> str:
    """A generation's new tokens decoded with special tokens skipped, nothing stripped (the
    official harnesses' rule); its .text when it carries no tokens."""
    tokens = getattr(output, "tokens", None)
    if tokens is not None and len(tokens):
        return tokenizer.decode(list(tokens), skip_special_tokens=True)
    return output.text


def token_count(output) -> int:
    tokens = getattr(output, "tokens", None)
    return 0 if tokens is None else len(tokens)
