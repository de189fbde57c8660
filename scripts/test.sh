#!/usr/bin/env bash
# Builds vkformer and runs every test suite with the Khronos validation layer on, on the
# device VKF_DEVICE selects (lavapipe when there is no GPU).
# usage: scripts/test.sh [--sanitize | --mesa25]
#   --sanitize  the same suites built with ASan and UBSan (build-sanitize), except the npm comparison
#   --mesa25    the same build's suites that use Vulkan on a second driver: Mesa 25's lavapipe
#               from bookworm-backports, unpacked beside the system's 22.3 (scripts/mesa25_driver.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

dir=build
extra=()
selection=()
mode=${1:-}
case "$mode" in
  "") ;;
  --sanitize)
    dir=build-sanitize
    # -O1 with line tables only (-g1), as ASan's documentation suggests: it builds in half the
    # time of -O2 -g (18 s against 10 s for test_attention.cpp), and stack traces keep their
    # file and line.
    extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_SANITIZE=ON
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
    # Leak checking is off: the Vulkan loader unloads lavapipe and the validation layer at
    # vkDestroyInstance, so LeakSanitizer can neither symbolize nor suppress their allocations.
    # ASan still catches every out-of-bounds access and use-after-free.
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
    # The CPU reference is ~3x slower instrumented: the attention grid runs its quick subset.
    export VKF_TEST_QUICK=1
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    # All but the comparison with Hugging Face's npm packages: it starts vkf-tokenize thousands
    # of times (23 tokenizers, 100 texts, encode and decode), which ASan's start-up made 570 s on
    # 2 cores; the tokenizer's memory safety is what its suites (instrumented here) and its fuzz
    # target check.
    selection=(-E '^hf_tokenizers_compare$')
    ;;
  --mesa25)
    # Only the suites that use Vulkan (the "host" label marks the others).
    selection=(-LE '^host$')
    ;;
  *)
    echo "usage: scripts/test.sh [--sanitize | --mesa25]" >&2
    exit 2
    ;;
esac
bash scripts/build.sh "$dir" "${extra[@]}"

export VKF_VALIDATION=1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
if [ "$mode" = "--mesa25" ]; then
  eval "$(bash scripts/mesa25_driver.sh)"
  # Every suite must run on that driver, not fall back to another one.
  driver=$("$dir/apps/vkf-info" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["devices"][0]["driver_info"])')
  case "$driver" in
    "Mesa 25."*) echo "scripts/test.sh: running on $driver" ;;
    *) echo "scripts/test.sh: expected Mesa 25's lavapipe, the loader gave '$driver'" >&2; exit 1 ;;
  esac
fi
ctest --test-dir "$dir" --output-on-failure --parallel 2 --timeout 1800 "${selection[@]}"
