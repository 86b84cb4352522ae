#!/usr/bin/env bash
# Configures and builds HyperPipe into build/ (Ninja and ccache when present): every
# target, or only those named (scripts/demo.sh builds the two executables it runs).
set -euo pipefail
cd "$(dirname "$0")/.."

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# CI (CI=true) builds with warnings as errors, and as a unity build: eight sources per
# compiler run parse the shared headers once, about half the time of a cold build, while
# an edit then recompiles its whole batch (HYPERPIPE_UNITY=ON or OFF chooses either way).
werror=OFF
unity=${HYPERPIPE_UNITY:-OFF}
if [ -n "${CI:-}" ]; then
  werror=ON
  unity=${HYPERPIPE_UNITY:-ON}
fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPERPIPE_WERROR=$werror \
    -DCMAKE_UNITY_BUILD=$unity
fi
targets=()
if [ $# -gt 0 ]; then targets=(--target "$@"); fi
cmake --build build --parallel "$(nproc)" "${targets[@]}"
# Tools (clangd, clang-tidy) look for the compilation database at the repository root.
ln -sf build/compile_commands.json compile_commands.json
