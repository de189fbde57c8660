#!/usr/bin/env bash
# scripts/gpu_proof.sh run OUT [--dry-run] [--build DIR] [--budget S] [--tar FILE]
# (docs/GPU_PROOF.md): on the machine with the GPU, from inside the packed folder, writes into
# OUT the device (vkf-info --json), each kernel and model suite's result under the validation
# layer, vkf-bench's result files at datacenter sizes, PyTorch's SDPA and matmul on the same
# shapes, Hugging Face's logits against vkf-run's, and summary.md. Every step runs under
# `timeout` within one budget (480 s): a step that would not fit is skipped with a note, so
# something always comes back. --dry-run: small sizes on whatever device (lavapipe here), for
# the tests; --build: the binaries of a build folder instead of a pack's.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/gpu_proof/common.sh
source "$here/common.sh"

out="" dry=0 build="" budget="" tarball=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --build) build=$(cd "$2" && pwd) || exit 2; shift ;;
    --budget) budget=$2; shift ;;
    --tar) tarball=$2; shift ;;
    -*) echo "gpu_proof.sh run: unknown option $1" >&2; exit 2 ;;
    *) out=$1 ;;
  esac
  shift
done
if [ -z "$out" ]; then
  echo "usage: scripts/gpu_proof.sh run OUT [--dry-run] [--build DIR] [--budget SECONDS] [--tar FILE]" >&2
  exit 2
fi
budget=${budget:-$([ $dry = 1 ] && echo 170 || echo 480)}
start=$(date +%s)
mkdir -p "$out/logs" "$out/tests" || exit 2
out=$(cd "$out" && pwd)
steps=$out/steps.tsv
printf 'step\tstatus\tseconds\tnote\n' >"$steps"
note() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$steps"; echo "gpu_proof: $1: $2 ($3 s) $4" >&2; }
left() { echo $((budget - ($(date +%s) - start))); }

# --- where the programs are: a pack (bin/, tests/, lib/ from payload.tar.xz) or a build ----
pack=$(dirname "$here")
lib=""
if [ -z "$build" ] && [ ! -x "$pack/bin/vkf-info" ] && [ ! -f "$pack/payload.tar.xz" ] && [ -x "$pack/../build/apps/vkf-info" ]; then
  build=$(cd "$pack/../build" && pwd)  # scripts/gpu_proof.sh in the repository: its build folder
fi
if [ -z "$build" ]; then
  if [ ! -x "$pack/bin/vkf-info" ] && [ -f "$pack/payload.tar.xz" ]; then
    # Unpacked beside the pack the first time (xz, or Python's lzma where xz is missing).
    tar -xJf "$pack/payload.tar.xz" -C "$pack" 2>/dev/null ||
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$pack/payload.tar.xz" "$pack" ||
      { echo "gpu_proof: cannot unpack $pack/payload.tar.xz" >&2; exit 1; }
  fi
  [ -x "$pack/bin/vkf-info" ] || { echo "gpu_proof: no bin/vkf-info in $pack: run it from a pack, or give --build DIR" >&2; exit 2; }
  bin=$pack/bin tests=$pack/tests lib=$pack/lib models=$pack/models
  # The pack's Vulkan loader and validation layer; its libstdc++ only where the system's is older.
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export VK_LAYER_PATH="$lib/layers"
  if ! "$bin/vkf-info" --help >/dev/null 2>"$out/logs/ld-check.log" && grep -q GLIBCXX "$out/logs/ld-check.log"; then
    export LD_LIBRARY_PATH="$lib/fallback:$LD_LIBRARY_PATH"
  fi
else
  bin=$out/bin tests=$build/tests models=""
  mkdir -p "$bin"
  for p in $GPU_PROOF_PROGRAMS; do ln -sf "$build/$p" "$bin/$(basename "$p")"; done
fi
# A bare NVIDIA machine has the driver's ICD outside the loader's search path.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ $dry = 0 ] && [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ] && [ -f $nvidia_icd ] &&
  ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1; then
  export VK_DRIVER_FILES=$nvidia_icd VK_ICD_FILENAMES=$nvidia_icd
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
export VKF_PIPELINE_CACHE_DIR=${VKF_PIPELINE_CACHE_DIR:-$out/logs/pipeline-cache}
{
  echo "budget_s=$budget dry_run=$dry pack=$pack build=$build"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} VK_LAYER_PATH=${VK_LAYER_PATH:-} VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
  uname -a; if command -v nvidia-smi >/dev/null; then nvidia-smi -L; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv; fi
} >"$out/environment.txt" 2>&1

# step NAME WANT MIN CMD...: CMD under `timeout`, WANT seconds or what the budget leaves minus
# `reserve` (the summary's); skipped below MIN. Output in logs/NAME.log.
reserve=15
step() {
  local name=$1 want=$2 min=$3 t rc t0
  shift 3
  t=$(($(left) - reserve))
  [ "$t" -gt "$want" ] && t=$want
  if [ "$t" -lt "$min" ]; then
    note "$name" skipped 0 "budget: ${t}s left, needs ${min}s"
    return 0
  fi
  t0=$(date +%s)
  timeout -k 5 "$t" "$@" >"$out/logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) note "$name" ok $(($(date +%s) - t0)) "" ;;
    124 | 137) note "$name" timeout $(($(date +%s) - t0)) "stopped after ${t}s" ;;
    77) note "$name" skipped $(($(date +%s) - t0)) "$(tail -1 "$out/logs/$name.log")" ;;
    *) note "$name" failed $(($(date +%s) - t0)) "exit $rc" ;;
  esac
  return 0
}

# --- 1. the device ------------------------------------------------------------------------
# shellcheck disable=SC2016  # expanded by the inner shell
step info 30 5 sh -c '"$1/vkf-info" --json >"$2/vkf-info.json"' _ "$bin" "$out"

# --- 2. checkpoints: the pack's, or made now -----------------------------------------------
if [ -z "$models" ] || [ ! -d "$models/bloom-f16" ]; then
  models=$out/logs/models
  # shellcheck disable=SC2016  # expanded by the inner shell
  step checkpoints 60 5 bash -c 'source "$1/common.sh"; make_checkpoints "$2" "$3" "$4"' _ "$here" "$models" "$bin" \
    "$([ $dry = 1 ] && echo tiny || echo gpu)"
fi

# --- 3. the suites under validation, in parallel (correctness, not timing) ----------------
# Each in the background under its own `timeout`: gtest JSON in tests/, its log in logs/, and in
# tests/NAME.status its exit status, the validation messages it reported (tests/support's
# sink fails a test on each) and whether it said the layer was missing.
run_suite() {
  local name=$1 exe=$2 t=$3 rc
  local -a args=()
  [ -n "${GPU_PROOF_FILTER:-}" ] && args=("--gtest_filter=$GPU_PROOF_FILTER")  # a --gtest_filter for every suite
  local limits=${VKF_LIMITS:-}
  # Suites that assert fp32 arithmetic's bounds run it (common.sh, GPU_PROOF_FP16_TESTS).
  case " ${GPU_PROOF_FP16_TESTS//$'\n'/ } " in
    *" $name "*) ;;
    *) limits=${limits:+$limits,}no_fp16_arithmetic ;;
  esac
  echo "VKF_LIMITS=$limits" >"$out/logs/test-$name.log"
  VKF_LIMITS=$limits VKF_VALIDATION=1 timeout -k 5 "$t" "$exe" "${args[@]}" \
    --gtest_output="json:$out/tests/$name.json" >>"$out/logs/test-$name.log" 2>&1
  rc=$?
  printf '%s %s %s\n' "$rc" "$(grep -c 'Vulkan validation message' "$out/logs/test-$name.log")" \
    "$(grep -c 'validation layer not installed' "$out/logs/test-$name.log")" >"$out/tests/$name.status"
}
t=$(($(left) - reserve))
[ $t -gt 120 ] && t=120
if [ $t -ge 10 ]; then
  t0=$(date +%s)
  # --dry-run: one shard in 40 of each suite (a few tests each), to stay within a CI test's time.
  [ $dry = 1 ] && export GTEST_TOTAL_SHARDS=${GPU_PROOF_SHARDS:-40} GTEST_SHARD_INDEX=0
  # GPU_PROOF_SUITES: another list of suites (the CTest entry's two).
  for p in ${GPU_PROOF_SUITES:-$GPU_PROOF_TESTS}; do
    name=$(basename "$p")
    exe=$tests/$p
    [ -x "$exe" ] || exe=$tests/$name
    # GPU_PROOF_FAIL_TEST=NAME runs `false` in its place: the tests' check that a failure shows.
    [ "${GPU_PROOF_FAIL_TEST:-}" = "$name" ] && exe=$(type -P false)
    if [ -x "$exe" ]; then run_suite "$name" "$exe" "$t" & else echo "97 0 0" >"$out/tests/$name.status"; fi
  done
  wait
  unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
  note suites ran $(($(date +%s) - t0)) "each under a ${t}s timeout; results in summary.md"
else
  note suites skipped 0 "budget: ${t}s left"
fi

# --- 4. vkf-bench, one result file per part (a file is written when its run ends) ----------
if [ $dry = 1 ]; then
  small=(--warmup 0 --reps 2 --progress lines)
  step bench-attention 60 10 "$bin/vkf-bench" run --suites ceilings,attention --quick --presets bloom-560m \
    --lengths 64 --decode-kv 128 --no-naive "${small[@]}" --out "$out/bench-attention.json"
  step bench-model-bloom 60 10 "$bin/vkf-bench" run --suites model --presets bloom-24x64 --weights q4_0 \
    --prefill-m 4 --batch 1,2 "${small[@]}" --out "$out/bench-model-bloom.json"
  # Skipped case by case where the device lacks cooperative matrices (lavapipe): the path stays run.
  step bench-matmul-coopmat 20 5 "$bin/vkf-bench" run --suites matmul --matmul-coopmat --presets bloom-560m \
    --prefill-m 32 "${small[@]}" --out "$out/bench-matmul-coopmat.json"
else
  # Attention at the default lengths (prefill 512..8192 with the naive baseline, decoding
  # against 512..8192 keys); the linear layers at m = 1 and 512; whole models at BLOOM-560m
  # and MPT-7B sizes in each weight format, batches of 1 to 64 sequences decoding together.
  step bench-attention 110 30 "$bin/vkf-bench" run --suites ceilings,attention --presets bloom-560m,mpt-7b \
    --progress lines --out "$out/bench-attention.json"
  step bench-matmul 45 15 "$bin/vkf-bench" run --suites matmul --presets bloom-560m,mpt-7b \
    --progress lines --out "$out/bench-matmul.json"
  # The opt-in cooperative-matrix (tensor core) kernel forced at m = 512, in a run of its own:
  # this is its first run anywhere, and a fault must not cost the plans' results above.
  step bench-matmul-coopmat 30 10 "$bin/vkf-bench" run --suites matmul --matmul-coopmat \
    --presets bloom-560m,mpt-7b --progress lines --out "$out/bench-matmul-coopmat.json"
fi

# --- 5. PyTorch on the same shapes; Hugging Face's logits against vkf-run's; whole models ---
python=${GPU_PROOF_PYTHON:-python3}
py_dry=()
[ $dry = 1 ] && py_dry=(--dry-run)
step torch 45 10 "$python" "$here/torch_bench.py" --bench "$out/bench-attention.json" --bench "$out/bench-matmul.json" \
  --out "$out/torch-bench.json" "${py_dry[@]}"
# The trained models/kjv-bloom travels with the repository (tracked), not in the pack: the
# pack's folder build/gpu-proof is two levels below the repository's root.
extra=()
for kjv in "$pack/models/kjv-bloom" "$pack/../../models/kjv-bloom"; do
  if [ $dry = 0 ] && [ -f "$kjv/config.json" ]; then extra=(--extra "$kjv"); break; fi
done
step logits 60 10 "$python" "$here/hf_logits.py" --bin "$bin" --models "$models" "${extra[@]}" \
  --out "$out/logits.json" "${py_dry[@]}"
if [ $dry = 0 ]; then
  step bench-model-bloom 60 20 "$bin/vkf-bench" run --suites model --presets bloom-560m --weights f16,q8_0,q4_0 \
    --prefill-m 128 --batch 1,4,16,64 --warmup 1 --reps 5 --progress lines --out "$out/bench-model-bloom.json"
  # MPT-7B's 13 GB of f16 weights are made and uploaded per format: one file each, so that a
  # timeout in one keeps the others.
  for w in f16 q4_0 q8_0; do
    step bench-model-mpt-$w 45 20 "$bin/vkf-bench" run --suites model --presets mpt-7b --weights $w \
      --prefill-m 128 --batch 1,4,16,64 --warmup 1 --reps 5 --progress lines --out "$out/bench-model-mpt-$w.json"
  done
fi

# --- 6. the summary -------------------------------------------------------------------------
"$python" "$here/summary.py" "$out" >"$out/logs/summary.log" 2>&1
status=$?  # 1: a suite did not pass (summary.py), or the summary itself failed
[ $status = 0 ] || [ $status = 1 ] || note summary failed 0 "exit $status, see logs/summary.log"
echo "gpu_proof: $(($(date +%s) - start)) s of ${budget} s" >&2
if [ -n "$tarball" ]; then
  tar -czf "$tarball" -C "$(dirname "$out")" --exclude=pipeline-cache --exclude=models --exclude=bin "$(basename "$out")"
fi
echo "$out/summary.md"
# Nonzero when a suite failed, timed out or was missing, so that a caller sees it; the files
# are there either way.
[ $status = 0 ]
