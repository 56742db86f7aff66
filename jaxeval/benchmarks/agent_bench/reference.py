"""Rules scores on disk (--save_scores / --reference_scores): a gzipped JSON file.

Every rules target's two scores (without, with the rule; null when unaligned) are keyed by
"config/split/item id/target index", beside the tokenization mode, the tokenizer's identity and
a hash of every scored item (the data revision). Reading one back checks all of them against
the run and names what differs; a key missing on either side is an error, never a skip.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from jaxeval.benchmarks.agent_bench.data import RulesItem
from jaxeval.errors import DataError

FORMAT = "jaxeval longctx-agent-bench rules scores"
VERSION = 1
_PROBE = "Don't use grep here, use rg: `rg -n TODO src/` ; Verwende nie sudo. Nepoužívej žádné ř."


def tokenizer_identity(tokenizer) -> dict:
    """What makes two tokenizers tokenize alike: the vocabulary and the ids of a probe text."""
    vocab = sorted(tokenizer.get_vocab().items())
    digest = hashlib.sha256(json.dumps([vocab, tokenizer(_PROBE)["input_ids"]]).encode()).hexdigest()[:16]
    return {"name": str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__),
            "vocab_size": len(tokenizer), "sha256": digest}


def item_hash(item: RulesItem) -> str:
    content = [item.text_without_rule, item.text_with_rule, list(item.rule_char), item.family,
               item.placement, [[t.char_without_rule, t.char_with_rule, t.expected_text] for t in item.targets]]
    return hashlib.sha256(json.dumps(content).encode()).hexdigest()[:16]


def score_key(config: str, split: str, item_id: str, index: int) -> str:
    return f"{config}/{split}/{item_id}/{index}"


def save_scores(path: str | Path, scores: dict, items: dict, mode: str, tokenizer) -> Path:
    """scores: (config, split, id, index) -> (without, with) or None; items: (config, split) -> items."""
    payload = {
        "format": FORMAT, "version": VERSION, "mode": mode, "tokenizer": tokenizer_identity(tokenizer),
        "splits": sorted(f"{config}/{split}" for config, split in items),
        "items": {f"{config}/{split}/{item.id}": item_hash(item)
                  for (config, split), split_items in items.items() for item in split_items},
        "scores": {score_key(*key): None if value is None else list(value) for key, value in scores.items()},
    }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as out:
        json.dump(payload, out)
    return path


def load_reference(path: str | Path, items: dict, mode: str, tokenizer) -> dict:
    """The reference's scores for exactly this run's targets, keyed as the run's scores are.

    Raises DataError naming the file and what differs: the mode, the tokenizer, an item (data
    revision), or keys missing on either side.
    """
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as source:
            payload = json.load(source)
    except FileNotFoundError:
        raise DataError(f"{path}: no such reference scores file") from None
    except (OSError, EOFError, ValueError) as error:  # UnicodeDecodeError is a ValueError
        raise DataError(f"{path}: not a gzipped JSON rules scores file ({type(error).__name__})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise DataError(f"{path}: not a {FORMAT} file (written by --save_scores)")
    if payload.get("mode") != mode:
        raise DataError(f"{path}: the reference was scored in mode '{payload.get('mode')}', this run in mode "
                        f"'{mode}'; the rules configs need the model and its reference in the same mode")
    ours = tokenizer_identity(tokenizer)
    theirs = payload.get("tokenizer") or {}
    if theirs.get("sha256") != ours["sha256"]:
        raise DataError(f"{path}: the reference was scored with another tokenizer ({theirs.get('name')}, "
                        f"{theirs.get('vocab_size')} tokens, identity {theirs.get('sha256')}) than this model's "
                        f"({ours['name']}, {ours['vocab_size']} tokens, identity {ours['sha256']})")
    stored_items, stored_scores = payload.get("items", {}), payload.get("scores", {})
    for (config, split), split_items in items.items():
        if f"{config}/{split}" not in payload.get("splits", []):
            raise DataError(f"{path}: the reference has no scores for {config}/{split}; scored: "
                            f"{', '.join(payload.get('splits', [])) or 'none'}")
        for item in split_items:
            name = f"{config}/{split}/{item.id}"
            if name in stored_items and stored_items[name] != item_hash(item):
                raise DataError(f"{path}: item '{item.id}' of {config}/{split} differs from the one the reference "
                                f"scored (another data revision?)")
    wanted = {score_key(config, split, item.id, index): (config, split, item.id, index)
              for (config, split), split_items in items.items() for item in split_items
              for index in range(len(item.targets))}
    run_splits = {f"{config}/{split}/" for config, split in items}
    missing = [key for key in wanted if key not in stored_scores]
    extra = [key for key in stored_scores if key not in wanted and any(key.startswith(s) for s in run_splits)]
    if missing:
        raise DataError(f"{path}: the reference lacks {len(missing)} target(s) this run scores, e.g. "
                        f"{', '.join(missing[:3])}")
    if extra:
        raise DataError(f"{path}: the reference has {len(extra)} target(s) this run does not score (another "
                        f"--limit or data revision?), e.g. {', '.join(extra[:3])}")
    return {key: None if stored_scores[name] is None else tuple(stored_scores[name]) for name, key in wanted.items()}
