#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job on the
# built-in defaults: describe GPT-3 2.7B over the mixed A100 + V100 + T4 example cluster,
# plan it (against the baselines frameworks use today), and simulate the plan, drawing
# its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/hyperpipe describe
echo
./build/hyperpipe plan --model gpt3-2.7b --cluster a100-v100-t4 --global-batch 64 \
  --out build/demo-plan.json
echo
./build/hyperpipe simulate --plan build/demo-plan.json \
  --trace build/demo-trace.json --svg build/demo-timeline.svg
