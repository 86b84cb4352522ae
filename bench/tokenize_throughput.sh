#!/usr/bin/env bash
# Throughput of `hyperpipe tokenize` with a GPT-2-style byte-level BPE (MERGES merges,
# learned from the example corpus by scripts/make_hf_model.py): TEXT_MB megabytes of the
# corpus's lines, numbered and shuffled so that pieces repeat as in real text rather than
# as whole copies, written as a Megatron indexed dataset. Prints the best of RUNS runs in
# MB/s of text and million tokens/s: what `train --tokenizer` spends in every process
# before its first step (`hyperpipe tokenize` once, then `--data PREFIX`, spends it once).
# Usage: bench/tokenize_throughput.sh [TEXT_MB] [MERGES] [RUNS]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
text_mb=${1:-32}
merges=${2:-1000}
runs=${3:-3}
binary=./build/hyperpipe
work=$(mktemp -d /tmp/hyperpipe-tokenize-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 scripts/make_hf_model.py --corpus examples/data/corpus.txt --out "$work/model" \
  --merges "$merges" --hidden 16 --layers 1 >/dev/null
python3 - "$work/text.txt" "$text_mb" <<'PY'
import random, sys
lines = open("examples/data/corpus.txt", encoding="utf-8").read().splitlines()
rng, size, n = random.Random(0), 0, 0
with open(sys.argv[1], "w", encoding="utf-8") as out:
    while size < int(sys.argv[2]) << 20:
        line = f"{n}: {rng.choice(lines)}\n"
        out.write(line)
        size += len(line.encode("utf-8"))
        n += 1
PY
bytes=$(stat -c %s "$work/text.txt")
best=""
for _ in $(seq "$runs"); do
  start=$(date +%s%N)
  "$binary" tokenize --input "$work/text.txt" --tokenizer "$work/model" \
    --output-prefix "$work/data" --format json >"$work/summary.json"
  end=$(date +%s%N)
  ns=$((end - start))
  if [ -z "$best" ] || [ "$ns" -lt "$best" ]; then best=$ns; fi
done
tokens=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' \
  "$work/summary.json")
awk -v ns="$best" -v bytes="$bytes" -v tokens="$tokens" -v merges="$merges" 'BEGIN {
  s = ns / 1e9
  printf "tokenize: %.1f MB of text, %d tokens (BPE of %d merges) in %.2f s: %.1f MB/s, %.2f M tokens/s\n",
         bytes / 1e6, tokens, merges, s, bytes / 1e6 / s, tokens / 1e6 / s
}'
