#!/usr/bin/env bash
# Builds vkformer and runs every test suite with the Khronos validation layer on, on the
# device VKF_DEVICE selects (lavapipe when there is no GPU).
# usage: scripts/test.sh [--sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

dir=build
extra=()
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-sanitize
  extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_SANITIZE=ON)
  # Mesa's lavapipe and LLVM keep allocations alive until exit: only vkformer's own leaks fail.
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
bash scripts/build.sh "$dir" "${extra[@]}"

export VKF_VALIDATION=1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
ctest --test-dir "$dir" --output-on-failure --parallel 2 --timeout 1800
