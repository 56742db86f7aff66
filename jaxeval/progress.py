"""Progress bars with rate and ETA on long steps (tokenization, reads, generation, judging).

tqdm (installed with transformers and datasets) draws them on stderr when it is a terminal;
JAXEVAL_PROGRESS=0 turns them off, JAXEVAL_PROGRESS=1 forces them on (e.g. in TPU logs).
"""

from __future__ import annotations

import os


def _enabled() -> bool | None:
    setting = os.environ.get("JAXEVAL_PROGRESS", "")
    if setting == "0":
        return False
    return True if setting == "1" else None  # None: tqdm decides (on for a terminal)


def progress(iterable=None, *, desc: str, total: int | None = None, unit: str = "item", initial: int = 0):
    """A tqdm bar over iterable (or a manual one with .update(n) when iterable is None);
    a silent stand-in when tqdm is missing or bars are off."""
    enabled = _enabled()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        enabled = False
    if enabled is False:
        return _Silent(iterable)
    return tqdm(iterable, desc=desc, total=total, unit=unit, initial=initial, dynamic_ncols=True,
                disable=None if enabled is None else False, leave=False)


class _Silent:
    def __init__(self, iterable):
        self._iterable = iterable

    def __iter__(self):
        return iter(self._iterable)

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass
