#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: bugprone, performance, cert) over the torch-free sources
# with build/'s compilation database; any finding fails it. About 10 s a file on one core;
# not part of scripts/test.sh (CI's time goes to the sanitizers and fuzzers).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/compile_commands.json ]; then bash scripts/build.sh; fi
mapfile -t sources < <(git ls-files 'src/hyperpipe/*.cc' | grep -v '^src/hyperpipe/runtime/' |
  grep -v -E 'cli/(train|launch|profile)_command\.cc$')
printf '%s\n' "${sources[@]}" | xargs -P "$(nproc)" -n 4 clang-tidy -p build --quiet
