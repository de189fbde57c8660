#!/usr/bin/env bash
# Formats every C++ file git tracks with the project's .clang-format (clang-format 14, Debian
# 12's). usage: scripts/format.sh [--check]   --check changes nothing and fails on any
# difference (CI runs it so), and on any std::to_string outside tests/: fmt::format (or
# fmt::to_string) is the one way shipped code builds its messages.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run -Werror "${files[@]}"
  echo "clang-format: ${#files[@]} files formatted as .clang-format says"
  if uses=$(git grep -n 'std::to_string' -- '*.cpp' '*.hpp' '*.h' '*.c' ':!tests/'); then
    echo "$uses"
    echo "std::to_string outside tests/ (above): build the text with fmt::format or fmt::to_string" >&2
    exit 1
  fi
else
  clang-format -i "${files[@]}"
fi
