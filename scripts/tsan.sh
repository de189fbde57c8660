#!/usr/bin/env bash
# Builds the concurrency test with ThreadSanitizer (build-tsan, -DVKF_TSAN=ON) and runs it on
# the selected device (lavapipe without a GPU) with the validation layer on. TSan reports in
# the driver, the validation layer and the loader, which are not instrumented, are suppressed
# by tests/support/tsan.supp (see its comments); any other report fails the run.
# usage: scripts/tsan.sh [CTEST_REGEX]   (default: ^test_model_threads$; '^dist_channel$' checks
#   host/dist's Channel and its heartbeat thread, ~15 s; '^test_split_batch$' SplitBatch's workers, ~20 s)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
tests=${1:-^test_model_threads\$}
dir=build-tsan
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKF_WERROR=ON -DVKF_TSAN=ON
# Only the test executables the regex names: a whole instrumented build takes far longer.
mapfile -t targets < <(ctest --test-dir "$dir" -N -R "$tests" | sed -n 's/^ *Test *#[0-9]*: //p')
# Script tests name their executable otherwise: dist_channel runs dist_probe under mpirun.
targets=("${targets[@]/#dist_channel/dist_probe}")
cmake --build "$dir" --parallel "$(nproc)" --target "${targets[@]}"
export TSAN_OPTIONS="suppressions=$PWD/tests/support/tsan.supp halt_on_error=1 second_deadlock_stack=1"
export VKF_VALIDATION=1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
ctest --test-dir "$dir" -R "$tests" --output-on-failure --timeout 1800
