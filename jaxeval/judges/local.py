"""A judge backed by a jaxeval Model in this process (the same engine as `jaxeval serve`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from jaxeval.errors import ConfigError, JaxevalError
from jaxeval.judges.base import FailureCounter, JudgeReply
from jaxeval.generation import GenerationOptions, chat_prompt_ids, generate, has_chat_template

log = logging.getLogger(__name__)


class LocalJudge:
    """Each prompt becomes one user turn (after an optional system message), rendered with the
    model's chat template, and generated with Model.generate in batches of batch_size.

    A prompt that does not fit the model (prompt + max_tokens beyond max_position_embeddings)
    fails alone, as a reply with error "too_long: ...", counted like any other failure.
    """

    def __init__(self, model, *, max_tokens: int = 1024, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, system: str | None = None, batch_size: int = 8):
        if not has_chat_template(model.tokenizer):
            raise ConfigError(f"{model.path}: a local judge needs a tokenizer with a chat template")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ConfigError(f"judge: max_tokens must be an integer >= 1, got {max_tokens!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"judge: batch_size must be an integer >= 1, got {batch_size!r}")
        if not (isinstance(temperature, (int, float)) and temperature >= 0):
            raise ConfigError(f"judge: temperature must be >= 0, got {temperature!r}")
        if not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
            raise ConfigError(f"judge: top_p must be in (0, 1], got {top_p!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 32:
            raise ConfigError(f"judge: seed must be an integer in [0, 2**32), got {seed!r}")
        self.model = model
        self.max_tokens, self.temperature, self.top_p, self.seed = max_tokens, temperature, top_p, seed
        self.system, self.batch_size = system, batch_size
        self.counter = FailureCounter()
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0}
        try:  # some templates refuse a system turn: say so now, not at the first judgement
            chat_prompt_ids(model.tokenizer, self.messages("?"))
        except Exception as e:
            raise ConfigError(f"{model.path}: the chat template cannot render a judge prompt"
                              f"{' with a system message' if system is not None else ''} "
                              f"({type(e).__name__}: {e})") from None

    @classmethod
    def from_path(cls, path: str, *, dtype: str | None = None, attention: str = "chunked", **options) -> "LocalJudge":
        """Load the model at `path` (dtype None: float32 on CPU, bfloat16 on accelerators)."""
        from jaxeval.api import load_model

        return cls(load_model(path, dtype=dtype or "auto", attention=attention), **options)

    def __repr__(self) -> str:
        return f"LocalJudge(model={self.model.path!r})"

    def settings(self) -> dict:
        return {"backend": "local", "model": self.model.path, "fingerprint": self.model.fingerprint,
                "dtype": self.model.dtype, "max_tokens": self.max_tokens, "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed, "system": self.system}

    def summary(self) -> dict:
        return {**self.counter.summary(), "usage": dict(self.usage)}

    def messages(self, prompt: str) -> list[dict]:
        turns = [{"role": "system", "content": self.system}] if self.system is not None else []
        return turns + [{"role": "user", "content": prompt}]

    def complete(self, prompts: Sequence[str]) -> list[JudgeReply]:
        if isinstance(prompts, str):
            raise TypeError("LocalJudge.complete takes a list of prompts, not one string")
        replies: list[JudgeReply | None] = [None] * len(prompts)
        limit = self.model.config.context_limit
        runnable: list[tuple[int, list[int]]] = []
        for i, prompt in enumerate(prompts):
            self.counter.record_call()
            ids = chat_prompt_ids(self.model.tokenizer, self.messages(prompt))
            if len(ids) + self.max_tokens > limit:
                replies[i] = self._fail(i, "too_long", f"prompt has {len(ids)} tokens; with max_tokens="
                                        f"{self.max_tokens} that exceeds the model's {limit} positions")
            else:
                runnable.append((i, ids))
        options = GenerationOptions(self.max_tokens, temperature=self.temperature, top_p=self.top_p, seed=self.seed)
        for start in range(0, len(runnable), self.batch_size):
            group = runnable[start:start + self.batch_size]
            try:
                outs = generate(self.model, [ids for _, ids in group], options, batch_size=self.batch_size,
                                what=f"local judge {self.model.path}", judge=True)  # never the run's --gen_kwargs
            except (JaxevalError, RuntimeError) as e:  # e.g. out of device memory: these prompts fail, counted
                for i, _ in group:
                    replies[i] = self._fail(i, "generate_error", f"{type(e).__name__}: {e}")
                continue
            for (i, ids), out in zip(group, outs):
                self.usage["prompt_tokens"] += len(ids)
                self.usage["completion_tokens"] += len(out.tokens)
                replies[i] = JudgeReply(text=out.text, error=None)
        return replies

    def _fail(self, index: int, kind: str, message: str) -> JudgeReply:
        self.counter.record_failure(kind)
        log.warning("local judge prompt %d failed: %s: %s", index, kind, message)
        return JudgeReply(text=None, error=f"{kind}: {message}")
