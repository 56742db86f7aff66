"""Build RULER cwe's shipped stand-in for english_words.json: jaxeval/assets/ruler/english_words_standin.txt.

    apt-get install wamerican-large        # Debian's SCOWL 2020.12.07 "large" American list
    python scripts/build_ruler_english_words.py [--scowl /usr/share/dict/american-english-large]

cwe samples its words from the wonderwords lists while a sample needs at most their 8,169
distinct words, and from english_words.json beyond that (RULER's file is not shipped: its licence
is not stated). The stand-in is every entry of the SCOWL list made only of the letters a-z (no
capitals, so no proper names or abbreviations; no apostrophes, so no possessives), joined with the
wonderwords 2.2.0 words, one word a line, sorted and distinct. SCOWL's licence (a permissive
notice-keeping one, jaxeval/assets/ruler/scowl/COPYRIGHT) and wonderwords' MIT both allow it.
Deterministic: the same file from the same inputs.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "jaxeval" / "assets" / "ruler"
LOWER_WORD = re.compile(r"[a-z]+")


def build(scowl: Path) -> list[str]:
    words = {line.strip() for line in scowl.read_text(encoding="utf-8").splitlines()}
    words = {w for w in words if LOWER_WORD.fullmatch(w)}
    for name in ("nounlist", "adjectivelist", "verblist"):
        lines = (ASSETS / "wonderwords" / f"{name}.txt").read_text(encoding="utf-8").splitlines()
        words |= {line.rstrip() for line in lines if line.strip()}
    return sorted(words)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scowl", default="/usr/share/dict/american-english-large",
                   help="SCOWL word list (Debian package wamerican-large)")
    p.add_argument("--out", default=str(ASSETS / "english_words_standin.txt"))
    args = p.parse_args()
    words = build(Path(args.scowl))
    out = Path(args.out)
    out.write_text("".join(w + "\n" for w in words), encoding="utf-8")
    print(f"wrote {out}: {len(words)} words, sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
