#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main job on the
# built-in defaults (a GPT-3 2.7B over the mixed A100 + V100 + T4 example cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/hyperpipe describe "$@"
