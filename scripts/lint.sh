#!/usr/bin/env bash
# The checks that need no build: every #include against the dependency table of docs/guide/development.md
# (scripts/check_layering.py) and every C++ file formatted as .clang-format says.
# scripts/test.sh (and so .ci/run) runs it first.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/check_layering.py
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.h' '*.cc')
else
  mapfile -t files < <(find src tests bench -name '*.h' -o -name '*.cc')
fi
clang-format --dry-run --Werror "${files[@]}"
echo "lint: ${#files[@]} C++ files formatted as .clang-format says"
