#!/bin/bash
# Regenerate tests/benchmarks/ruler/data/official/<template>_<length>/<task>.jsonl with RULER's own
# generator (NVIDIA/RULER at c3f5e3b), so jaxeval's generator can be compared with it.
#
#   RULER=/path/to/RULER/checkout  WW=/path/with/wonderwords-2.2.0-and-tenacity  \
#     scripts/ruler_official_samples.sh 2048 base 5 niah_single_1 vt cwe ...
#
# Setup the script expects (done once by hand):
#   - RULER's scripts/data/synthetic/json/: PaulGrahamEssays.json = jaxeval/assets/ruler/
#     haystack_pride_and_prejudice.json, squad.json and hotpotqa.json = the shipped stand-ins, and
#     english_words.json any JSON object of words (its Git LFS pointer crashes cwe at import;
#     below ~64k tokens cwe never samples it);
#   - WW: the unpacked wheels of wonderwords==2.2.0 and tenacity (pip download --no-deps);
#   - NLTK_DATA with tokenizers/punkt_tab (tests/benchmarks/ruler/data/nltk_data).
# Keep the first rows of each validation.jsonl (prefix-stable: jaxeval generates as many).
# A task that never finishes (a sample that cannot fit: RULER retries it forever) writes nothing.
set -eu
L=$1; T=$2; N=$3; shift 3
OUT=${OUT:-/tmp/ruler_official}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$RULER/scripts/data"
for task in "$@"; do
  PYTHONPATH=$WW NLTK_DATA=${NLTK_DATA:-$HERE/tests/benchmarks/ruler/data/nltk_data} python prepare.py \
    --save_dir "$OUT/$T/$L" --benchmark synthetic --task "$task" --tokenizer_path "$HERE/jaxeval/assets/tiny_llama" \
    --tokenizer_type hf --max_seq_length "$L" --model_template_type "$T" --num_samples "$N"
  if [ -s "$OUT/$T/$L/$task/validation.jsonl" ]; then
    mkdir -p "$HERE/tests/benchmarks/ruler/data/official/${T}_$L"
    head -2 "$OUT/$T/$L/$task/validation.jsonl" > "$HERE/tests/benchmarks/ruler/data/official/${T}_$L/$task.jsonl"
  fi
done
