#!/usr/bin/env bash
# Configures and builds HyperPipe into build/ (Ninja and ccache when present).
set -euo pipefail
cd "$(dirname "$0")/.."

generator=()
if command -v ninja >/dev/null 2>&1; then generator=(-G Ninja); fi
# CI (CI=true) builds with warnings as errors.
werror=OFF
if [ -n "${CI:-}" ]; then werror=ON; fi
if [ ! -f build/CMakeCache.txt ]; then
  cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHYPERPIPE_WERROR=$werror
fi
cmake --build build --parallel "$(nproc)"
# Tools (clangd, clang-tidy) look for the compilation database at the repository root.
ln -sf build/compile_commands.json compile_commands.json
