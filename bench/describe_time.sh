#!/usr/bin/env bash
# Whole-process wall time of the planning commands, start to exit, averaged over RUNS runs:
# `hyperpipe describe` of GPT-3 2.7B over the A100 + V100 + T4 example (target < 30 ms) and
# `hyperpipe simulate` of the example 4-stage plan (target < 50 ms). Neither loads libtorch.
# Usage: bench/describe_time.sh [RUNS]   (after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
binary=./build/hyperpipe

# time_command LABEL ARGS...: the mean wall time of RUNS runs, the page cache warmed first.
time_command() {
  local label=$1
  shift
  "$binary" "$@" >/dev/null
  local start end
  start=$(date +%s%N)
  for _ in $(seq "$runs"); do "$binary" "$@" >/dev/null; done
  end=$(date +%s%N)
  awk -v ns=$((end - start)) -v n="$runs" -v label="$label" \
    'BEGIN { printf "%s: %.2f ms per run (mean of %d)\n", label, ns / n / 1e6, n }'
}

time_command "describe gpt3-2.7b on a100-v100-t4" \
  describe --model gpt3-2.7b --cluster examples/clusters/a100-v100-t4.yaml
time_command "simulate examples/plans/gpt3-2.7b-4stage.json" \
  simulate --plan examples/plans/gpt3-2.7b-4stage.json
