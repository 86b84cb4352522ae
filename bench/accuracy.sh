#!/usr/bin/env bash
# How well the simulator predicts real runs (issue 6): on the built-in cpu-emulated
# cluster (CPU stand-ins for A100, V100, T4), profile tiny-gpt, then train a set of
# plans — the planner's, baselines, hand-written splits and schedules — and compare each
# one's predicted iteration with the measured one. Prints a table, the mean absolute
# relative error, and whether the plan predicted fastest was the measured fastest.
# Usage: bash bench/accuracy.sh [steps per plan, default 8]   (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-8}
hp=./build/hyperpipe
model=$PWD/examples/models/tiny-gpt.yaml
out=build/accuracy
rm -rf "$out"
mkdir -p "$out"

$hp profile --model "$model" --cluster cpu-emulated --microbatch 1,2,4,8 \
  --out "$out/profiles.json" >/dev/null
plan() { $hp plan --model "$model" --cluster cpu-emulated --global-batch 32 \
  --profiles "$out/profiles.json" --max-tp 1 "$@" >/dev/null; }
plan --out "$out/planned.json"
plan --baseline uniform --out "$out/uniform.json"
plan --baseline capability --out "$out/capability.json"
write() {  # name, schedule, stages
  cat >"$out/$1.json" <<JSON
{"format": "hyperpipe.plan/1", "model": "$model", "cluster": "cpu-emulated",
 "micro_batch_size": 4, "micro_batches": 8, "schedule": $2, "stages": $3}
JSON
}
write three-1f1b '"1f1b"' '[{"layers": [0, 5], "devices": [0]}, {"layers": [5, 7], "devices": [1]},
  {"layers": [7, 8], "devices": [2]}]'
write three-zb-h1 '"zb-h1"' '[{"layers": [0, 5], "devices": [0]}, {"layers": [5, 7], "devices": [1]},
  {"layers": [7, 8], "devices": [2]}]'
write two-gpipe '"gpipe"' '[{"layers": [0, 6], "devices": [0]}, {"layers": [6, 8], "devices": [1]}]'
write two-hetero '{"kind": "hetero-1f1b", "warmup": [4, 1]}' \
  '[{"layers": [0, 6], "devices": [0]}, {"layers": [6, 8], "devices": [1]}]'

printf '%-12s %12s %12s %8s\n' plan predicted measured error
for name in planned uniform capability three-1f1b three-zb-h1 two-gpipe two-hetero; do
  $hp launch --plan "$out/$name.json" --data examples/data/corpus.txt --steps "$steps" \
    --profiles "$out/profiles.json" --metrics "$out/$name.jsonl" >"$out/$name.log" 2>&1
  python3 - "$out/$name.jsonl.prediction.json" "$name" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<12} {p['predicted_iteration_s']*1e3:9.1f} ms {p['measured_iteration_s']*1e3:9.1f} ms"
      f" {100*p['relative_error']:+7.1f}%")
PY
done
python3 - "$out" <<'PY'
import glob, json, sys
runs = {f.split('/')[-1].split('.')[0]: json.load(open(f))
        for f in glob.glob(sys.argv[1] + '/*.jsonl.prediction.json')}
errors = [abs(r['relative_error']) for r in runs.values()]
fastest_predicted = min(runs, key=lambda n: runs[n]['predicted_iteration_s'])
fastest_measured = min(runs, key=lambda n: runs[n]['measured_iteration_s'])
print(f"\nmean absolute relative error over {len(runs)} plans: {100*sum(errors)/len(errors):.1f}%")
print(f"predicted fastest: {fastest_predicted}; measured fastest: {fastest_measured}")
PY
