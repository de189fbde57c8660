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
  # Leak checking is off: the Vulkan loader unloads lavapipe and the validation layer at
  # vkDestroyInstance, so LeakSanitizer can neither symbolize nor suppress their allocations.
  # ASan still catches every out-of-bounds access and use-after-free.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
  # The CPU reference is ~3x slower instrumented: the attention grid runs its quick subset.
  export VKF_TEST_QUICK=1
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
bash scripts/build.sh "$dir" "${extra[@]}"

export VKF_VALIDATION=1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
ctest --test-dir "$dir" --output-on-failure --parallel 2 --timeout 1800
