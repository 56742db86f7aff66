"""The text a curve reads: a UTF-8 text file, a JSON file whose "text" field holds it (the layout
of RULER's haystack files, {"text": ...}), or a RULER haystack by name (`ruler:essay`: the user's
--ruler_essay file, else the shipped public-domain stand-in, also the default; `ruler:noise`:
niah's repeated noise sentences); cut to `length` tokens of the model's tokenizer."""

from __future__ import annotations

from pathlib import Path

from jaxeval.errors import ConfigError, DataError
from jaxeval.generation import encode
from jaxeval.io.inputs import read_json, read_text


def read_source(path: str | Path) -> str:
    path = Path(path)
    if path.suffix == ".json":
        data = read_json(path, name="--text")
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise DataError(f"{path}: a JSON text file needs a string field 'text'")
        text = data["text"]
    else:
        text = read_text(path, name="--text")
    if not text.strip():
        raise DataError(f"{path}: the text is empty")
    return text


DEFAULT_TEXT = "ruler:essay"
RULER_HAYSTACKS = ("essay", "noise")
NOISE_REPEATS = 55_000  # 20-30 tokens a copy in common tokenizers (Qwen3 24): past 1M tokens


def resolve_text(text: str, ruler_essay: str | None) -> tuple[str, dict]:
    """(the text, what the results say about it: source, path, sha256, about) for --text."""
    if not text.startswith("ruler:"):
        if ruler_essay:
            raise ConfigError("--ruler_essay is read only with --text ruler:essay")
        return read_source(text), {"source": text, "path": text}
    name = text[len("ruler:"):]
    if name not in RULER_HAYSTACKS:
        raise ConfigError(f"--text {text}: unknown RULER haystack; known: "
                          f"{', '.join('ruler:' + h for h in RULER_HAYSTACKS)}")
    if name == "noise":
        from jaxeval.benchmarks.ruler.niah import NOISE

        return " ".join([NOISE] * NOISE_REPEATS), {"source": text, "path": None,
                                                  "about": "RULER niah's noise haystack (its sentences repeated)"}
    from jaxeval.benchmarks.ruler.inputs import source

    described = source("essay", ruler_essay)  # a bad --ruler_essay is one line naming it
    return read_source(described["path"]), {"source": text, **described}


def check_length(length: int | None) -> None:
    if length is not None and length < 2:
        raise DataError(f"--length must be at least 2 tokens, got {length}")


def text_ids(path: str | Path, text: str, tokenizer, length: int | None, max_length: int) -> list[int]:
    """The first `length` token ids of the text read from path (default: as many as the model
    reads, max_length), encoded with the tokenizer's default special tokens (a BOS where it adds one)."""
    check_length(length)
    want = max_length if length is None else length
    if want > max_length:
        raise DataError(f"--length {want}: the model reads at most {max_length} tokens")
    ids = encode(tokenizer, text, add_special_tokens=True)
    if length is not None and len(ids) < length:
        raise DataError(f"{path}: {len(ids)} tokens, fewer than --length {length}")
    if len(ids) < 2:
        raise DataError(f"{path}: fewer than 2 tokens: nothing to predict")
    return ids[:want]
