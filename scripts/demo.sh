#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job on
# built-in defaults. On this host (no GPU needed), three CPU stand-ins for A100, V100 and
# T4 (the built-in cpu-emulated cluster): describe them, profile the host, plan a small
# GPT for them against the uniform split frameworks use, train it for a short run, and
# end with the simulator's prediction against the measured iteration. Then the same
# planner on a real mixed cluster: GPT-3 2.7B over 4 A100s, 8 V100s and 4 T4s.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# Only the executables the demo runs; scripts/test.sh builds the tests and benchmarks.
bash scripts/build.sh hyperpipe hyperpipe-worker

model=examples/models/tiny-gpt.yaml
out=build/demo
mkdir -p "$out"
rm -f "$out/profiles.json"
section() { printf '\n== %s\n\n' "$1"; }

section "The emulated cluster and the model"
./build/hyperpipe describe --model "$model" --cluster cpu-emulated
section "Profiling the host (each layer kind, per micro-batch size)"
./build/hyperpipe profile --model "$model" --cluster cpu-emulated --micro-batch 1,2,4,8 \
  --out "$out/profiles.json"
section "Planning with the profiles (no tensor parallelism: the runtime has none yet)"
./build/hyperpipe plan --model "$model" --cluster cpu-emulated --global-batch 32 \
  --profiles "$out/profiles.json" --max-tp 1 --out "$out/plan.json"
section "Training with the plan"
./build/hyperpipe launch --plan "$out/plan.json" --data examples/data/corpus.txt --steps 30 \
  --profiles "$out/profiles.json" --metrics "$out/metrics.jsonl" --timeline "$out/run.json" \
  --svg "$out/measured.svg"
section "Predicted against measured, device group by device group"
./build/hyperpipe compare --predicted "$out/run.predicted.json" --measured "$out/run.json" \
  --svg "$out/compare.svg"
section "The same planner on a mixed GPU cluster: GPT-3 2.7B on 4 × A100, 8 × V100, 4 × T4"
./build/hyperpipe plan --model gpt3-2.7b --cluster a100-v100-t4 --global-batch 64 \
  --out "$out/gpt3-plan.json"
./build/hyperpipe simulate --plan "$out/gpt3-plan.json" --svg "$out/gpt3-timeline.svg" >/dev/null
echo "Timelines: $out/compare.svg (predicted over measured), $out/gpt3-timeline.svg"
