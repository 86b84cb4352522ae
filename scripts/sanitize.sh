#!/usr/bin/env bash
# Builds the torch-free parts with clang under AddressSanitizer + UndefinedBehaviorSanitizer
# (warnings as errors) into build-asan/, runs their tests there, then every fuzz harness for
# a bounded time (scripts/fuzz.sh). libtorch is left out: Debian's libtorch is not built
# with ASan, and its own allocations and static initialisers report through it (README,
# "Reliability"). Called by scripts/test.sh, so by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
if [ ! -f build-asan/CMakeCache.txt ]; then
  CC=clang CXX=clang++ cmake -S . -B build-asan "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
    -DHYPERPIPE_SANITIZE=ON -DHYPERPIPE_FUZZ=ON -DHYPERPIPE_WERROR=ON \
    -DHYPERPIPE_BUILD_BENCH=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON >/dev/null
fi
cmake --build build-asan --parallel "$(nproc)"

# Leaks are reported too; every finding aborts the test that made it.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --parallel "$(nproc)" --timeout 600 --output-on-failure)

bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
