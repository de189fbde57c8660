#!/usr/bin/env bash
# Formats every C++ file git tracks with the project's .clang-format (clang-format 14, Debian
# 12's). usage: scripts/format.sh [--check]   --check changes nothing and fails on any
# difference (CI runs it so).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run -Werror "${files[@]}"
  echo "clang-format: ${#files[@]} files formatted as .clang-format says"
else
  clang-format -i "${files[@]}"
fi
