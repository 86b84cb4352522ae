#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job on the
# built-in defaults: describe GPT-3 2.7B over the mixed A100 + V100 + T4 example cluster,
# then simulate the example 4-stage plan for it and draw its timeline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/hyperpipe describe
echo
./build/hyperpipe simulate --plan examples/plans/gpt3-2.7b-4stage.json \
  --trace build/demo-trace.json --svg build/demo-timeline.svg
