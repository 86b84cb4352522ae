#!/usr/bin/env bash
# The README's second command: install what is missing, build, and run the whole test
# suite with CTest. .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 600
