#!/usr/bin/env bash
# The README's second command: install what is missing, check includes and formatting
# (scripts/lint.sh), build and show the CUDA build linked, run the sanitizer build's tests
# and the fuzzers (scripts/sanitize.sh), then the whole test suite with CTest.
# .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
# timed STEP COMMAND…: runs it and prints `time: STEP N s` (the table of CI time in docs/guide/development.md is
# made of these lines).
timed() {
  local step=$1 start=$SECONDS
  shift
  "$@"
  echo "time: $step $((SECONDS - start)) s"
}
export -f timed
timed install bash scripts/install-deps.sh
timed lint bash scripts/lint.sh
timed build bash scripts/build.sh
# The CUDA build of libtorch is linked in: the worker starts here, where no GPU is, and
# names the torch, CUDA runtime and NCCL it loaded (the NCCL path compiled, not run).
version=$(build/hyperpipe --version)
echo "$version"
if ! grep -q '^CUDA: compiled in' <<<"$version" || ! grep -q '^NCCL: compiled in' <<<"$version"; then
  echo "test: hyperpipe-worker is not linked against a CUDA build of libtorch" >&2
  exit 1
fi
# The torch-free parts under ASan + UBSan, then each fuzz harness for FUZZ_SECONDS (20).
FUZZ_SECONDS="${FUZZ_SECONDS:-20}" bash scripts/sanitize.sh
cd build
timed tests ctest --output-on-failure --parallel "$(nproc)" --timeout 600
