#!/usr/bin/env bash
# The README's second command: install what is missing, check includes and formatting
# (scripts/lint.sh), build, run the sanitizer build's tests and the fuzzers
# (scripts/sanitize.sh), then the whole test suite with CTest.
# .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/lint.sh
bash scripts/build.sh
# The torch-free parts under ASan + UBSan, then each fuzz harness for FUZZ_SECONDS (20).
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" bash scripts/sanitize.sh
cd build
ctest --output-on-failure --parallel "$(nproc)" --timeout 600
