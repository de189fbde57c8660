#!/usr/bin/env bash
# Builds vkformer and runs the test suites with the Khronos validation layer on, on the device
# VKF_DEVICE selects (lavapipe when there is no GPU).
# usage: scripts/test.sh [--sanitize | --mesa25] [--full]
#   (none)      every suite but the "full" runs below: what CI runs first (Mesa 22.3's lavapipe)
#   --sanitize  the same suites built with ASan and UBSan (build-sanitize), without the
#               validation layer (the first leg checks the same calls under it), without the
#               npm comparison and without the server's soak
#   --mesa25    the same build's suites that use Vulkan on a second driver: Mesa 25's lavapipe
#               from bookworm-backports, unpacked beside the system's 22.3
#               (scripts/mesa25_driver.sh); not the spec_minimum reruns, which check limits,
#               not drivers (the first leg runs them)
#   --full      adds what CI leaves out of that mode (docs/DESIGN.md, Testing): the CTest
#               entries labelled "full" (test_attention_full: the shape grid over an fp16 K/V
#               cache; the *_spec_minimum_unrolled reruns: the preset with the drivers' loop
#               unrolling), and per mode the suites named above (--sanitize: validation on and
#               hf_tokenizers_compare; --mesa25: the spec_minimum reruns)
set -euo pipefail
cd "$(dirname "$0")/.."

dir=build
extra=()
validation=ON
mode=""
full=0
for arg in "$@"; do
  case "$arg" in
    --sanitize | --mesa25)
      if [ -n "$mode" ]; then
        echo "scripts/test.sh: --sanitize and --mesa25 are two legs; run them one at a time" >&2
        exit 2
      fi
      mode=$arg
      ;;
    --full) full=1 ;;
    *)
      echo "usage: scripts/test.sh [--sanitize | --mesa25] [--full]" >&2
      exit 2
      ;;
  esac
done
bash scripts/deps.sh

# CTest selection: entries with a label in `excluded` are left out, and those named by
# `skipped`.
excluded=()
if [ $full -eq 0 ]; then
  excluded+=(full)
fi
skipped=""
case "$mode" in
  "") ;;
  --sanitize)
    dir=build-sanitize
    # -Og with line tables only (-g1), so that stack traces keep their file and line. -Og is
    # GCC's -O1 less the passes that get in a debugger's way: under ASan and UBSan it compiles
    # in ~30% less CPU than -O1 (9 host, runtime and test files: 42.3 s against 29.1; a file
    # including only CLI11: 9.9 s against 5.6), and the suites run no slower (test_model_faults,
    # test_model_families and test_batch, warm Mesa cache: 87.3 s of CPU at -O1, 88.5 at -Og).
    # -O1 had replaced -O2 -g for the same reason (18 s against 10 s for test_attention.cpp).
    extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_SANITIZE=ON
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-Og -g1 -DNDEBUG")
    # Leak checking is off: the Vulkan loader unloads lavapipe and the validation layer at
    # vkDestroyInstance, so LeakSanitizer can neither symbolize nor suppress their allocations.
    # ASan still catches every out-of-bounds access and use-after-free.
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
    # The CPU reference is ~3x slower instrumented: the attention grid runs its quick subset.
    export VKF_TEST_QUICK=1
    # The server's soak (label soak, 2 minutes of load) runs in the first leg: every abuse it
    # mixes is also one check of vkf_server_e2e, which this leg runs under ASan and UBSan.
    excluded+=(soak)
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    if [ $full -eq 0 ]; then
      # The validation layer is not instrumented, but every allocation it makes goes through
      # ASan's allocator: without it this leg's suites took 171 s instead of 240 s (test_attention
      # 68 s instead of 120 s). The calls it would check are the ones the first leg's identical
      # suites make with it on.
      validation=OFF
      # The comparison with Hugging Face's npm packages starts vkf-tokenize thousands of times
      # (23 tokenizers, 100 texts, encode and decode), which ASan's start-up made 570 s on 2
      # cores; the tokenizer's memory safety is what its suites (instrumented here) and its
      # fuzz target check.
      skipped='^hf_tokenizers_compare$'
    fi
    ;;
  --mesa25)
    # Only the suites that use Vulkan (the "host" label marks the others), and not those of
    # the first leg alone (first_leg: gpu_proof_dry_run checks a script, dist_run and dist_server
    # MPI and the server's pipeline over ranks, not a driver).
    excluded+=(host first_leg)
    if [ $full -eq 0 ]; then
      excluded+=(spec_minimum)
    fi
    ;;
esac
selection=()
if [ ${#excluded[@]} -gt 0 ]; then
  selection+=(-LE "^($(IFS='|'; echo "${excluded[*]}"))\$")
fi
if [ -n "$skipped" ]; then
  selection+=(-E "$skipped")
fi
if [ "$dir" != build ]; then
  extra+=("-DVKF_SPIRV_DIR=$(bash scripts/spirv_dir.sh)")
fi
bash scripts/build.sh "$dir" "${extra[@]}" -DVKF_TEST_VALIDATION=$validation

export VKF_VALIDATION=$([ $validation = ON ] && echo 1 || echo 0)
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
