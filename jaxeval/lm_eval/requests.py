"""lm-eval's requests as engine calls: score windows, merged reads, generation settings and their text.

Pure host code (numpy and a tokenizer; no JAX, no lm-eval), so every rule here is the one
lm-eval's `hf` model (HFLM, lm-eval 0.4.9.2 to 0.4.13) applies:
- a (context, continuation) pair is cut from the left to max_length + 1 tokens; the model reads
  all but the last and the continuation is scored at its last len(continuation) positions;
- is_greedy: the top-1 token equals the continuation token at every continuation position;
- a generation prompt is cut from the left to max_length - max_gen_toks tokens; the text is the
  new tokens decoded without special tokens, cut at the first of the `until` strings.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np


def score_window(context_enc: list[int], continuation_enc: list[int], max_length: int) -> tuple[np.ndarray, int]:
    """-> (ids int32 [T], n): the read of HFLM._loglikelihood_tokens, continuation = the last n of ids.

    ids is (context + continuation)[-(max_length + 1):]; the engine reads ids[:-1] (at most
    max_length tokens, as HF's model input) and predicts ids[T - n:].
    """
    n = len(continuation_enc)
    if not context_enc or not n:
        raise ValueError(f"loglikelihood: empty context ({len(context_enc)} tokens) or continuation ({n} tokens)")
    if n > max_length:
        raise ValueError(f"loglikelihood: the continuation has {n} tokens, more than max_length={max_length}")
    ids = np.asarray((list(context_enc) + list(continuation_enc))[-(max_length + 1):], np.int32)
    return ids, n


def bucket_columns(c: int) -> int:
    """Candidate columns of a merged read: the next power of two (few compiled head shapes)."""
    return 1 << max(c - 1, 0).bit_length()


@dataclasses.dataclass
class ReadPlan:
    """Score windows merged into engine reads: windows whose inputs (ids[:-1]) and continuation
    length agree differ only in their last token, so they are one read with a token column each."""

    reads: list  # (ids int32 [T], positions int32 [K], tokens int32 [K, C]) per engine read
    where: list  # per window: (read index, column)
    targets: list  # per window: int32 [K], the continuation tokens

    def answers(self, results) -> list[tuple[float, bool]]:
        """ReadResult per read -> (sum of log p(continuation), is_greedy) per window, in window order."""
        out = []
        for (read, column), target in zip(self.where, self.targets):
            result = results[read]
            logprob = float(np.sum(np.asarray(result.logprobs, np.float64)[:, column]))
            out.append((logprob, bool(np.array_equal(np.asarray(result.top1), target))))
        return out


def plan_reads(windows: list[tuple[np.ndarray, int]]) -> ReadPlan:
    """windows from score_window -> a ReadPlan, reads sorted by their ids (shared prefixes side by side)."""
    merged: dict[tuple, list[int]] = {}
    for index, (ids, n) in enumerate(windows):
        merged.setdefault((ids[:-1].tobytes(), n), []).append(index)
    order = sorted(merged, key=lambda key: windows[merged[key][0]][0].tolist())
    reads, where, targets = [], [None] * len(windows), [None] * len(windows)
    for read_index, key in enumerate(order):
        members = merged[key]
        ids, n = windows[members[0]]
        positions = np.arange(ids.size - n, ids.size, dtype=np.int32)
        columns = [windows[m][0][positions] for m in members]
        columns += [columns[0]] * (bucket_columns(len(columns)) - len(columns))
        reads.append((ids, positions, np.stack(columns, axis=1)))
        for column, m in enumerate(members):
            where[m] = (read_index, column)
            targets[m] = windows[m][0][positions]
    return ReadPlan(reads=reads, where=where, targets=targets)


@dataclasses.dataclass(frozen=True)
class GenSettings:
    until: list  # stop strings from the request (the EOS text is added by the caller)
    max_gen_toks: int
    temperature: float  # 0: greedy
    top_p: float


MAX_TOKEN_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")  # lm-eval's priority
SAMPLING_ONLY = ("temperature", "top_p", "top_k", "min_p", "typical_p")  # ignored when greedy, as HF ignores them


def gen_settings(gen_kwargs: dict, default_max_gen_toks: int) -> GenSettings:
    """A request's gen_kwargs as lm-eval normalises them (lm_eval.models.utils.normalize_gen_kwargs):
    until as a list, max_gen_toks from its aliases, do_sample False -> temperature 0, do_sample
    unset -> sampling iff temperature > 0. What the engine cannot do is an error, not ignored."""
    kwargs = copy.deepcopy(dict(gen_kwargs or {}))
    until = kwargs.pop("until", None)
    until = [] if until is None else until if isinstance(until, list) else [until]
    if any(not isinstance(u, str) for u in until):
        raise ValueError(f"generate_until: `until` must be a string or a list of strings, got {until!r}")
    given = [kwargs.pop(k) for k in MAX_TOKEN_KEYS if k in kwargs]
    given = [v for v in given if v is not None]
    max_gen_toks = int(given[0]) if given else int(default_max_gen_toks)
    do_sample = kwargs.pop("do_sample", None)
    temperature = float(kwargs.get("temperature", 0.0) or 0.0)
    sampling = temperature > 0.0 if do_sample is None else bool(do_sample) and temperature > 0.0
    top_p = float(kwargs.get("top_p", 1.0) if kwargs.get("top_p") is not None else 1.0)
    if sampling:
        top_k = kwargs.get("top_k")
        if top_k not in (None, 0, -1):
            raise ValueError(f"generate_until: top_k={top_k} is not supported by jaxeval's sampler "
                             "(temperature and top_p are)")
        for key in ("min_p", "typical_p"):
            if kwargs.get(key) not in (None, 0, 0.0, 1, 1.0):
                raise ValueError(f"generate_until: {key}={kwargs[key]} is not supported by jaxeval's sampler")
    for key in SAMPLING_ONLY:
        kwargs.pop(key, None)
    if int(kwargs.pop("num_beams", 1) or 1) != 1:
        raise ValueError("generate_until: beam search (num_beams > 1) is not supported by jaxeval")
    for key, neutral in (("repetition_penalty", 1.0), ("length_penalty", 1.0), ("num_return_sequences", 1)):
        if kwargs.get(key) not in (None, neutral):
            raise ValueError(f"generate_until: {key}={kwargs[key]} is not supported by jaxeval")
        kwargs.pop(key, None)
    kwargs.pop("use_cache", None)
    if kwargs:
        raise ValueError(f"generate_until: generation kwargs {sorted(kwargs)} are not supported by jaxeval "
                         f"(supported: until, {', '.join(MAX_TOKEN_KEYS)}, do_sample, temperature, top_p)")
    if max_gen_toks < 1:
        raise ValueError(f"generate_until: max_gen_toks must be positive, got {max_gen_toks}")
    return GenSettings(until=until, max_gen_toks=max_gen_toks, temperature=temperature if sampling else 0.0,
                       top_p=top_p if sampling else 1.0)


def generation_text(tokens: list[int], until: list[str], tokenizer) -> str:
    """HFLM's text of a generation: new tokens up to where HF's stop criteria end it (a stop string
    in the text decoded *with* special tokens), decoded without special tokens, cut at each stop string.

    The engine already stops at stop strings in the text without special tokens and at EOS; a
    stop string that only shows with special tokens (a chat task's "<|im_end|>") is found here.
    """
    terms = [u for u in until if u]

    def stops(end: int) -> bool:  # grows with end: a longer prefix's text extends a shorter one's
        return any(t in tokenizer.decode(tokens[:end], skip_special_tokens=False) for t in terms)

    if terms and stops(len(tokens)):
        low, high = 1, len(tokens)  # the shortest prefix whose text holds a stop string
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if stops(middle) else (middle + 1, high)
        tokens = tokens[:low]
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    for term in terms:
        text = text.split(term)[0]
    return text


def has_bos_prefix(text: str, bos: str | None) -> bool:
    return bos is not None and text.startswith(bos)
