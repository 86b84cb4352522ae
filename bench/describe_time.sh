#!/usr/bin/env bash
# Wall time of `hyperpipe describe` on the issue's reference case (GPT-3 2.7B over the
# A100 + V100 + T4 example), process start to exit, averaged over RUNS runs.
# Usage: bench/describe_time.sh [RUNS]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
binary=./build/hyperpipe
args=(describe --model gpt3-2.7b --cluster examples/clusters/a100-v100-t4.yaml)
"$binary" "${args[@]}" >/dev/null  # warm the page cache
start=$(date +%s%N)
for _ in $(seq "$runs"); do "$binary" "${args[@]}" >/dev/null; done
end=$(date +%s%N)
awk -v ns=$((end - start)) -v n="$runs" \
  'BEGIN { printf "describe gpt3-2.7b on a100-v100-t4: %.2f ms per run (mean of %d)\n", ns / n / 1e6, n }'
