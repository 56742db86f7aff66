"""A model that records what a benchmark asks of it instead of computing it.

CountingModel has the real config, tokenizer and EOS ids (no weights) and the model contract
(jaxeval.engine.backend.LanguageModel): read_many() (and read(), one request of it) checks each
request as the engine does and records the trunk work (prefix sharing as the engine does it,
jaxeval.engine.prefix_reuse.planned_segments), generate() records each engine batch as
jaxeval.engine.generate batches it. Answers are placeholders (log-probs 0, empty generations), so
the benchmark's scores mean nothing; its requests are exactly the real run's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxeval.api import Model
from jaxeval.engine.backend import LanguageModel, ReadResult, SharedReads
from jaxeval.engine.buckets import generation_batches, length_bucket


@dataclasses.dataclass(frozen=True)
class ReadSegment:
    first: int  # first input token run (after a shared prefix)
    end: int  # inputs run up to here
    rows: int  # read positions (LM-head rows)
    length: int  # the request's input tokens (for its length bin)


@dataclasses.dataclass(frozen=True)
class GenerateBatch:
    prompts: tuple[int, ...]  # prompt lengths of one engine batch
    max_new_tokens: int  # the bound on new tokens per prompt
    cache_len: int  # the KV cache length of the batch


@dataclasses.dataclass
class Recorder:
    reads: list = dataclasses.field(default_factory=list)
    batches: list = dataclasses.field(default_factory=list)
    judge_calls: list = dataclasses.field(default_factory=list)  # (judge label, prompt tokens, reply bound)


class CountingModel(LanguageModel):
    """The stand-in for jaxeval.api.Model during planning (read_many, read, generate)."""

    def __init__(self, config, tokenizer, path: str, eos_ids=(), prefill_chunk: int = 2048):
        self.config, self.tokenizer, self.path = config, tokenizer, path
        self.prefill_chunk = prefill_chunk
        self.generation_eos_ids = tuple(eos_ids)
        self.mesh = None
        self.stats = {"reads": 0, "tokens": 0}
        self.recorder = Recorder()
        self.tokenizer_proxy = None  # why another tokenizer counts (plan.command.counting_model)

    # the real Model's rule, from the same fields (config, generation_eos_ids, tokenizer)
    eos_token_ids = Model.eos_token_ids

    def read_many(self, requests, *, batch_size: int = 1, share_prefixes: bool = True) -> SharedReads:
        """The requests checked as the engine checks them and their trunk work recorded: shared
        prefixes as the engine shares them (batching changes no count)."""
        from jaxeval.engine.prefix_reuse import planned_segments

        requests = list(requests)
        segments = planned_segments(self.config, requests, self.prefill_chunk, share_prefixes)
        longest = max((int(np.max(p)) for _, p, _ in requests), default=0)
        self.recorder.reads += [ReadSegment(first, end, rows, end if rows else longest) for first, end, rows in segments]
        run = sum(end - first for first, end, _ in segments)
        self.stats["reads"] += len(requests)
        self.stats["tokens"] += run
        return SharedReads(results=[_placeholder(p, t) for _, p, t in requests], tokens_run=run,
                           tokens_naive=sum(int(np.max(p)) for _, p, _ in requests), prefixes=0)

    def final_states(self, ids, rows):
        raise NotImplementedError("jaxeval plan does not count final-state reads (embedding models)")

    def generate(self, prompts, max_new_tokens: int, stop=None, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int = 0, *, stop_token_ids=None, min_new_tokens: int = 0, batch_size: int = 8):
        from jaxeval.engine.generate import Generation, check_generate_request

        arrays, _ = check_generate_request(prompts, max_new_tokens, stop, temperature, top_p, seed, self.config,
                                           self.tokenizer)
        record_generation(self.recorder, [int(a.size) for a in arrays], max_new_tokens, batch_size)
        return [Generation(tokens=[], text="", finish_reason="length") for _ in arrays]


def record_generation(recorder: Recorder, prompt_lengths, max_new_tokens: int, batch_size: int) -> None:
    """The engine batches of one generate call over prompts of these lengths (as the engine batches them)."""
    for batch in generation_batches(list(prompt_lengths), max_new_tokens, batch_size):
        lengths = tuple(int(prompt_lengths[i]) for i in batch)
        recorder.batches.append(GenerateBatch(lengths, int(max_new_tokens),
                                              length_bucket(max(lengths) + max_new_tokens - 1)))


def _placeholder(positions, tokens) -> ReadResult:
    k = int(np.asarray(positions).size)
    shape = np.shape(tokens)
    return ReadResult(top1=np.zeros(k, np.int32),
                      logprobs=np.zeros((k,) if len(shape) == 1 else (k, shape[1]), np.float32))


class CountingJudge:
    """Stands in for a judge: records each prompt's tokens (the model's tokenizer as a proxy for
    the judge's) and the reply bound, answers nothing (each reply a failure the scorer skips)."""

    def __init__(self, judge, label: str, tokenizer, recorder: Recorder):
        self._judge, self.label, self._tokenizer, self._recorder = judge, label, tokenizer, recorder
        self.max_tokens = getattr(judge, "max_tokens", None)

    def complete(self, prompts):
        from jaxeval.judges.base import JudgeReply

        for prompt in prompts:
            tokens = len(self._tokenizer(prompt, add_special_tokens=False)["input_ids"]) if self._tokenizer else len(prompt) // 4
            self._recorder.judge_calls.append((self.label, tokens, self.max_tokens or 0))
        return [JudgeReply(text=None, error="planned, not called") for _ in prompts]

    def settings(self) -> dict:
        return self._judge.settings()

    def __getattr__(self, name):  # spec, model name, ...: the real judge's
        # copy.copy (judges.base.with_reply_limit) builds the copy without __init__ and asks for
        # __setstate__ and friends before _judge exists: private names must not be forwarded.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._judge, name)
