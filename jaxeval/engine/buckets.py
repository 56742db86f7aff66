"""Fixed shape ladders, so a handful of compilations cover every input length.

Lengths round up to the next rung of a fixed ladder (not to a power of two of the raw length):
a 32,769-token text feeds 32,768 inputs and lands on the 32,768 rung, not 65,536.
"""

from __future__ import annotations

LENGTH_LADDER = (256, 512, 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768,
                 49152, 65536, 98304, 131072, 196608, 262144)
_BEYOND = 65536  # past the ladder, round up to a multiple of this


def length_bucket(n: int) -> int:
    """The padded input length for n input tokens."""
    if n < 1:
        raise ValueError(f"length must be positive, got {n}")
    for rung in LENGTH_LADDER:
        if n <= rung:
            return rung
    return -(-n // _BEYOND) * _BEYOND


def count_bucket(k: int, minimum: int = 8) -> int:
    """The padded number of read positions: a power of two, at least `minimum`."""
    size = minimum
    while size < k:
        size *= 2
    return size


def chunk_size(bucket: int, preferred: int) -> int:
    """The largest power of two <= preferred that divides the bucket (the prefill chunk length)."""
    size = 1
    while size * 2 <= min(preferred, bucket) and bucket % (size * 2) == 0:
        size *= 2
    return size


def generation_bucket(prompt_tokens: int, max_new_tokens: int) -> tuple[int, int]:
    """(prompt rung, cache rung) of a generation: prompts that share both decode together with the
    shapes (prefill chunk, KV cache length) each would get alone."""
    return length_bucket(prompt_tokens), length_bucket(prompt_tokens + max_new_tokens - 1)


def generation_batches(prompt_tokens, max_new_tokens: int, batch_size: int) -> list[list[int]]:
    """Indices of the prompts (their lengths in prompt_tokens) per engine batch: one generation_bucket
    per batch, at most batch_size, longest first (ties in prompt order)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i in sorted(range(len(prompt_tokens)), key=lambda i: -prompt_tokens[i]):
        groups.setdefault(generation_bucket(prompt_tokens[i], max_new_tokens), []).append(i)
    return [group[first:first + batch_size] for group in groups.values() for first in range(0, len(group), batch_size)]
