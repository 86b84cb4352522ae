#!/usr/bin/env bash
# Builds the torch-free parts with clang under AddressSanitizer + UndefinedBehaviorSanitizer
# (warnings as errors) into build-asan/, runs their tests there, then every fuzz harness for
# a bounded time (scripts/fuzz.sh). libtorch is left out: PyTorch's libtorch is not built
# with ASan, and its own allocations and static initialisers report through it (docs/guide/
# reliability.md). Line tables (-g1) are all a sanitizer's report needs; a unity build
# (eight sources per compiler run) parses the shared headers once per batch, half the
# build's time cold. Called by
# scripts/test.sh, so by CI, which times each part (`time:` lines).
set -euo pipefail
cd "$(dirname "$0")/.."
# scripts/test.sh's `timed`, or none.
if ! declare -F timed >/dev/null; then timed() { shift; "$@"; }; fi

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f build-asan/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-asan "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DHYPERPIPE_SANITIZE=ON -DHYPERPIPE_FUZZ=ON -DHYPERPIPE_WERROR=ON \
    -DHYPERPIPE_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON \
    -DCMAKE_UNITY_BUILD=ON >/dev/null
fi
timed sanitizer-build cmake --build build-asan --parallel "$(nproc)"

# Leaks are reported too; every finding aborts the test that made it.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
timed sanitizer-tests ctest --test-dir build-asan --parallel "$(nproc)" --timeout 600 \
  --output-on-failure

timed fuzz bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
